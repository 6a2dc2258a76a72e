// fp32 → bf16 conversion (round to nearest even), for matrix-product operands in bf16 mode.
#include <cstdint>

#include "core/cuda/convert.h"
#include "core/cuda/reduce.cuh"
#include "core/cuda/vector_access.h"

namespace pathbench::cuda {

namespace {

// One thread per element: the tail after the vector kernel, and unaligned operands.
__global__ void to_bf16_kernel(const float* x, __nv_bfloat16* y, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __float2bfloat16_rn(x[i]);
}

// Four elements per thread: x as float4 [quads], y as two bf16 pairs per quad (same rounding).
__global__ void to_bf16_quads_kernel(const float4* x, __nv_bfloat162* y, int64_t quads) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= quads) return;
  const float4 v = x[i];
  y[2 * i] = __floats2bfloat162_rn(v.x, v.y);
  y[2 * i + 1] = __floats2bfloat162_rn(v.z, v.w);
}

}  // namespace

void to_bf16(const float* x, __nv_bfloat16* y, int64_t n, cudaStream_t stream) {
  int64_t done = 0;
  if (vector_aligned(x, y)) {  // x 16-byte, y 8-byte aligned
    const int64_t quads = n / 4;
    if (quads > 0) {
      to_bf16_quads_kernel<<<blocks_for(quads), 256, 0, stream>>>(reinterpret_cast<const float4*>(x),
                                                                  reinterpret_cast<__nv_bfloat162*>(y), quads);
      PATHBENCH_CUDA_CHECK_LAUNCH("to_bf16_quads_kernel");
    }
    done = 4 * quads;
  }
  if (done < n) {
    to_bf16_kernel<<<blocks_for(n - done), 256, 0, stream>>>(x + done, y + done, n - done);
    PATHBENCH_CUDA_CHECK_LAUNCH("to_bf16_kernel");
  }
}

}  // namespace pathbench::cuda
