// Finishing pass of the column sums (reduce.cuh).
#include "core/cuda/reduce.cuh"

namespace pathbench::cuda {

namespace {
constexpr int kFinishCols = 32;  // columns a block: a warp's lanes
constexpr int kFinishRows = 32;  // rows of threads a block, each over every kFinishRows-th split

// Block (kFinishCols, kFinishRows): thread (x, y) adds the splits y, y + kFinishRows, … of column
// kFinishCols·blockIdx.x + x in order (a warp's loads are adjacent columns of one split), then
// thread (x, 0) adds the rows' sums in order, so the result does not depend on scheduling.
__global__ void finish_column_sums_kernel(const float* partial, int64_t splits, int64_t cols, float* out,
                                          int64_t group) {
  __shared__ float sums[kFinishRows][kFinishCols + 1];
  const int64_t col = int64_t(blockIdx.x) * kFinishCols + threadIdx.x;
  float acc = 0.0f;
  if (col < cols)
    for (int64_t split = threadIdx.y; split < splits; split += kFinishRows) acc += partial[split * cols + col];
  sums[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y != 0 || col >= cols) return;
  float s = 0.0f;
  for (int y = 0; y < kFinishRows; ++y) s += sums[y][threadIdx.x];
  out[group ? col % group * (cols / group) + col / group : col] += s;
}
}  // namespace

void finish_column_sums(const float* partial, int64_t splits, int64_t cols, float* out, cudaStream_t stream,
                        int64_t group) {
  const dim3 block(kFinishCols, kFinishRows);
  finish_column_sums_kernel<<<blocks_for(cols, kFinishCols), block, 0, stream>>>(partial, splits, cols, out, group);
  PATHBENCH_CUDA_CHECK_LAUNCH("finish_column_sums_kernel");
}

}  // namespace pathbench::cuda
