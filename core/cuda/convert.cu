// fp32 → bf16 conversion (round to nearest even), for matrix-product operands in bf16 mode.
#include "core/cuda/convert.h"
#include "core/cuda/reduce.cuh"

namespace pathbench::cuda {

namespace {
__global__ void to_bf16_kernel(const float* x, __nv_bfloat16* y, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __float2bfloat16_rn(x[i]);
}
}  // namespace

void to_bf16(const float* x, __nv_bfloat16* y, int64_t n, cudaStream_t stream) {
  to_bf16_kernel<<<blocks_for(n), 256, 0, stream>>>(x, y, n);
  PATHBENCH_CUDA_CHECK_LAUNCH("to_bf16_kernel");
}

}  // namespace pathbench::cuda
