// SwiGLU and GELU on the GPU, elementwise (same formulas as activations.cpp).
#include "core/cuda/reduce.cuh"
#include "core/cuda/storage.cuh"
#include "core/ops/cuda/ops.h"

namespace pathbench::cuda {

namespace {

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

// SwiGLU kernels: blockIdx.x is the row, blockIdx.y · blockDim.x + threadIdx.x the column; inputs
// (and their gradients) at row · in_stride + column, outputs at row · cols + column.
constexpr int kSwigluThreads = 256;

__global__ void swiglu_forward_kernel(const float* a, const float* b, int64_t in_stride, float* h, bf16* h16,
                                      int64_t cols) {
  const int64_t j = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  if (j >= cols) return;
  const int64_t in = int64_t(blockIdx.x) * in_stride + j;
  store_float_or_bf16(h, h16, int64_t(blockIdx.x) * cols + j, a[in] * sigmoid(a[in]) * b[in]);
}

__global__ void swiglu_backward_kernel(const float* a, const float* b, int64_t in_stride, const float* dh, float* da,
                                       float* db, bf16* da16, bf16* db16, int64_t cols) {
  const int64_t j = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  if (j >= cols) return;
  const int64_t in = int64_t(blockIdx.x) * in_stride + j;
  const float g = dh[int64_t(blockIdx.x) * cols + j], s = sigmoid(a[in]);
  store_float_or_bf16(da, da16, in, g * b[in] * s * (1.0f + a[in] * (1.0f - s)));
  store_float_or_bf16(db, db16, in, g * a[in] * s);
}

dim3 swiglu_grid(int64_t rows, int64_t cols) {
  return dim3(unsigned(rows), unsigned((cols + kSwigluThreads - 1) / kSwigluThreads));
}

__global__ void gelu_forward_kernel(const float* x, float* h, bf16* h16, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) store_float_or_bf16(h, h16, i, 0.5f * x[i] * (1.0f + erff(x[i] * kInvSqrt2)));
}

__global__ void gelu_backward_kernel(const float* x, const float* dh, float* dx, bf16* dx16, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float cdf = 0.5f * (1.0f + erff(x[i] * kInvSqrt2));
  const float pdf = kInvSqrt2Pi * expf(-0.5f * x[i] * x[i]);
  store_float_or_bf16(dx, dx16, i, dh[i] * (cdf + x[i] * pdf));
}

}  // namespace

void swiglu_forward(const float* a, const float* b, int64_t in_stride, float* h, int64_t rows, int64_t cols,
                    cudaStream_t stream, bf16* h16) {
  if (rows * cols == 0) return;
  swiglu_forward_kernel<<<swiglu_grid(rows, cols), kSwigluThreads, 0, stream>>>(a, b, in_stride, h, h16, cols);
  PATHBENCH_CUDA_CHECK_LAUNCH("swiglu_forward_kernel");
}

void swiglu_backward(const float* a, const float* b, int64_t in_stride, const float* dh, float* da, float* db,
                     int64_t rows, int64_t cols, cudaStream_t stream, bf16* da16, bf16* db16) {
  if (rows * cols == 0) return;
  swiglu_backward_kernel<<<swiglu_grid(rows, cols), kSwigluThreads, 0, stream>>>(a, b, in_stride, dh, da, db, da16,
                                                                                 db16, cols);
  PATHBENCH_CUDA_CHECK_LAUNCH("swiglu_backward_kernel");
}

void gelu_forward(const float* x, float* h, int64_t n, cudaStream_t stream, bf16* h16) {
  gelu_forward_kernel<<<blocks_for(n), 256, 0, stream>>>(x, h, h16, n);
  PATHBENCH_CUDA_CHECK_LAUNCH("gelu_forward_kernel");
}

void gelu_backward(const float* x, const float* dh, float* dx, int64_t n, cudaStream_t stream, bf16* dx16) {
  gelu_backward_kernel<<<blocks_for(n), 256, 0, stream>>>(x, dh, dx, dx16, n);
  PATHBENCH_CUDA_CHECK_LAUNCH("gelu_backward_kernel");
}

}  // namespace pathbench::cuda
