// Finishing pass of the column sums (reduce.cuh).
#include "core/cuda/reduce.cuh"

namespace pathbench::cuda {

namespace {
__global__ void finish_column_sums_kernel(const float* partial, int64_t cols, float* out) {
  const int64_t col = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  float s = 0.0f;
  for (int split = 0; split < kColumnSplits; ++split) s += partial[split * cols + col];
  out[col] += s;
}
}  // namespace

void finish_column_sums(const float* partial, int64_t cols, float* out, cudaStream_t stream) {
  finish_column_sums_kernel<<<blocks_for(cols), 256, 0, stream>>>(partial, cols, out);
  PATHBENCH_CUDA_CHECK_LAUNCH("finish_column_sums_kernel");
}

}  // namespace pathbench::cuda
