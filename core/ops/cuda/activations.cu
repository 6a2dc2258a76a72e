// SwiGLU and GELU on the GPU, elementwise (same formulas as activations.cpp).
#include "core/cuda/reduce.cuh"
#include "core/ops/cuda/ops.h"

namespace pathbench::cuda {

namespace {

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

// Writes the forward value v at i into h and/or (as bf16) h16, whichever is not null.
__device__ __forceinline__ void store_activation(float* h, bf16* h16, int64_t i, float v) {
  if (h) h[i] = v;
  if (h16) h16[i] = __float2bfloat16_rn(v);
}

__global__ void swiglu_forward_kernel(const float* a, const float* b, float* h, bf16* h16, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) store_activation(h, h16, i, a[i] * sigmoid(a[i]) * b[i]);
}

__global__ void swiglu_backward_kernel(const float* a, const float* b, const float* dh, float* da, float* db, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float s = sigmoid(a[i]);
  da[i] = dh[i] * b[i] * s * (1.0f + a[i] * (1.0f - s));
  db[i] = dh[i] * a[i] * s;
}

__global__ void gelu_forward_kernel(const float* x, float* h, bf16* h16, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) store_activation(h, h16, i, 0.5f * x[i] * (1.0f + erff(x[i] * kInvSqrt2)));
}

__global__ void gelu_backward_kernel(const float* x, const float* dh, float* dx, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float cdf = 0.5f * (1.0f + erff(x[i] * kInvSqrt2));
  const float pdf = kInvSqrt2Pi * expf(-0.5f * x[i] * x[i]);
  dx[i] = dh[i] * (cdf + x[i] * pdf);
}

}  // namespace

void swiglu_forward(const float* a, const float* b, float* h, int64_t n, cudaStream_t stream, bf16* h16) {
  swiglu_forward_kernel<<<blocks_for(n), 256, 0, stream>>>(a, b, h, h16, n);
  PATHBENCH_CUDA_CHECK_LAUNCH("swiglu_forward_kernel");
}

void swiglu_backward(const float* a, const float* b, const float* dh, float* da, float* db, int64_t n,
                     cudaStream_t stream) {
  swiglu_backward_kernel<<<blocks_for(n), 256, 0, stream>>>(a, b, dh, da, db, n);
  PATHBENCH_CUDA_CHECK_LAUNCH("swiglu_backward_kernel");
}

void gelu_forward(const float* x, float* h, int64_t n, cudaStream_t stream, bf16* h16) {
  gelu_forward_kernel<<<blocks_for(n), 256, 0, stream>>>(x, h, h16, n);
  PATHBENCH_CUDA_CHECK_LAUNCH("gelu_forward_kernel");
}

void gelu_backward(const float* x, const float* dh, float* dx, int64_t n, cudaStream_t stream) {
  gelu_backward_kernel<<<blocks_for(n), 256, 0, stream>>>(x, dh, dx, n);
  PATHBENCH_CUDA_CHECK_LAUNCH("gelu_backward_kernel");
}

}  // namespace pathbench::cuda
