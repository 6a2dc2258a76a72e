// Finishing pass of the column sums (reduce.cuh).
#include "core/cuda/reduce.cuh"

namespace pathbench::cuda {

namespace {
constexpr int kFinishWarps = 8;  // columns per block

// One warp per column: lane l adds the splits l, l + 32, … in order, then the warp's lanes combine
// in a fixed tree (warp_sum), so the result does not depend on scheduling.
__global__ void finish_column_sums_kernel(const float* partial, int64_t splits, int64_t cols, float* out,
                                          int64_t group) {
  const int64_t col = int64_t(blockIdx.x) * kFinishWarps + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (col >= cols) return;
  float s = 0.0f;
  for (int64_t split = lane; split < splits; split += 32) s += partial[split * cols + col];
  s = warp_sum(s);
  if (lane == 0) out[group ? col % group * (cols / group) + col / group : col] += s;
}
}  // namespace

void finish_column_sums(const float* partial, int64_t splits, int64_t cols, float* out, cudaStream_t stream,
                        int64_t group) {
  finish_column_sums_kernel<<<blocks_for(cols, kFinishWarps), 32 * kFinishWarps, 0, stream>>>(partial, splits, cols,
                                                                                               out, group);
  PATHBENCH_CUDA_CHECK_LAUNCH("finish_column_sums_kernel");
}

}  // namespace pathbench::cuda
