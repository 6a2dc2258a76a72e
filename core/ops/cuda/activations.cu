// SwiGLU and GELU on the GPU, elementwise (same formulas as activations.cpp), on fp32 or bf16 inputs.
#include "core/cuda/reduce.cuh"
#include "core/cuda/storage.cuh"
#include "core/cuda/vector_access.h"
#include "core/ops/cuda/ops.h"

namespace pathbench::cuda {

namespace {

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

// SwiGLU kernels: blockIdx.x is the row, blockIdx.y · blockDim.x + threadIdx.x the column; inputs
// (and their gradients) at row · in_stride + column, outputs at row · cols + column. Inputs In:
// float or bf16 (read as fp32; the arithmetic is fp32 either way).
constexpr int kSwigluThreads = 256;

template <typename In>
__global__ void swiglu_forward_kernel(const In* a, const In* b, int64_t in_stride, float* h, bf16* h16, int64_t cols) {
  const int64_t j = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  if (j >= cols) return;
  const int64_t in = int64_t(blockIdx.x) * in_stride + j;
  const float av = load_float(a + in);
  store_float_or_bf16(h, h16, int64_t(blockIdx.x) * cols + j, av * sigmoid(av) * load_float(b + in));
}

template <typename In>
__global__ void swiglu_backward_kernel(const In* a, const In* b, int64_t in_stride, const In* dh, float* da, float* db,
                                       bf16* da16, bf16* db16, int64_t cols) {
  const int64_t j = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  if (j >= cols) return;
  const int64_t in = int64_t(blockIdx.x) * in_stride + j;
  const float av = load_float(a + in), bv = load_float(b + in);
  const float g = load_float(dh + int64_t(blockIdx.x) * cols + j), s = sigmoid(av);
  store_float_or_bf16(da, da16, in, g * bv * s * (1.0f + av * (1.0f - s)));
  store_float_or_bf16(db, db16, in, g * av * s);
}

dim3 swiglu_grid(int64_t rows, int64_t cols) {
  return dim3(unsigned(rows), unsigned((cols + kSwigluThreads - 1) / kSwigluThreads));
}

// GELU and its gradient at one value, in fp32 (the formulas of activations.cpp).
__device__ __forceinline__ float gelu(float x) { return 0.5f * x * (1.0f + erff(x * kInvSqrt2)); }

__device__ __forceinline__ float gelu_gradient(float x, float dh) {
  const float cdf = 0.5f * (1.0f + erff(x * kInvSqrt2));
  const float pdf = kInvSqrt2Pi * expf(-0.5f * x * x);
  return dh * (cdf + x * pdf);
}

// GELU kernels: thread i takes elements [V·i, V·i + V), with one vector load and store per array
// when all V are below n (V = kVectorWidth: every array vector-aligned; V = 1: the scalar
// fallback), and one at a time those below n otherwise (the last thread, when V does not divide n).
template <int V, typename In>
__global__ void gelu_forward_kernel(const In* x, float* h, bf16* h16, int64_t n) {
  const int64_t i = V * (int64_t(blockIdx.x) * blockDim.x + threadIdx.x);
  if (i + V <= n) {
    float v[V];
    load_floats(x + i, v);
    for (float& e : v) e = gelu(e);
    store_floats_or_bf16(h, h16, i, v);
  } else {
    for (int64_t j = i; j < n; ++j) store_float_or_bf16(h, h16, j, gelu(load_float(x + j)));
  }
}

template <int V, typename In>
__global__ void gelu_backward_kernel(const In* x, const In* dh, float* dx, bf16* dx16, int64_t n) {
  const int64_t i = V * (int64_t(blockIdx.x) * blockDim.x + threadIdx.x);
  if (i + V <= n) {
    float xv[V], g[V];
    load_floats(x + i, xv);
    load_floats(dh + i, g);
    for (int k = 0; k < V; ++k) g[k] = gelu_gradient(xv[k], g[k]);
    store_floats_or_bf16(dx, dx16, i, g);
  } else {
    for (int64_t j = i; j < n; ++j)
      store_float_or_bf16(dx, dx16, j, gelu_gradient(load_float(x + j), load_float(dh + j)));
  }
}

// Blocks of 256 threads for n elements, V per thread.
template <int V>
unsigned gelu_blocks(int64_t n) {
  return blocks_for((n + V - 1) / V);
}

}  // namespace

template <typename In>
void swiglu_forward(const In* a, const In* b, int64_t in_stride, float* h, int64_t rows, int64_t cols,
                    cudaStream_t stream, bf16* h16) {
  if (rows * cols == 0) return;
  swiglu_forward_kernel<<<swiglu_grid(rows, cols), kSwigluThreads, 0, stream>>>(a, b, in_stride, h, h16, cols);
  PATHBENCH_CUDA_CHECK_LAUNCH("swiglu_forward_kernel");
}

template <typename In>
void swiglu_backward(const In* a, const In* b, int64_t in_stride, const In* dh, float* da, float* db, int64_t rows,
                     int64_t cols, cudaStream_t stream, bf16* da16, bf16* db16) {
  if (rows * cols == 0) return;
  swiglu_backward_kernel<<<swiglu_grid(rows, cols), kSwigluThreads, 0, stream>>>(a, b, in_stride, dh, da, db, da16,
                                                                                 db16, cols);
  PATHBENCH_CUDA_CHECK_LAUNCH("swiglu_backward_kernel");
}

template <typename In>
void gelu_forward(const In* x, float* h, int64_t n, cudaStream_t stream, bf16* h16) {
  if (vector_aligned(x, h, h16))
    gelu_forward_kernel<kVectorWidth><<<gelu_blocks<kVectorWidth>(n), 256, 0, stream>>>(x, h, h16, n);
  else
    gelu_forward_kernel<1><<<gelu_blocks<1>(n), 256, 0, stream>>>(x, h, h16, n);
  PATHBENCH_CUDA_CHECK_LAUNCH("gelu_forward_kernel");
}

template <typename In>
void gelu_backward(const In* x, const In* dh, float* dx, int64_t n, cudaStream_t stream, bf16* dx16) {
  if (vector_aligned(x, dh, dx, dx16))
    gelu_backward_kernel<kVectorWidth><<<gelu_blocks<kVectorWidth>(n), 256, 0, stream>>>(x, dh, dx, dx16, n);
  else
    gelu_backward_kernel<1><<<gelu_blocks<1>(n), 256, 0, stream>>>(x, dh, dx, dx16, n);
  PATHBENCH_CUDA_CHECK_LAUNCH("gelu_backward_kernel");
}

#define PATHBENCH_INSTANTIATE(In)                                                                              \
  template void swiglu_forward<In>(const In*, const In*, int64_t, float*, int64_t, int64_t, cudaStream_t, bf16*); \
  template void swiglu_backward<In>(const In*, const In*, int64_t, const In*, float*, float*, int64_t, int64_t,   \
                                    cudaStream_t, bf16*, bf16*);                                                  \
  template void gelu_forward<In>(const In*, float*, int64_t, cudaStream_t, bf16*);                               \
  template void gelu_backward<In>(const In*, const In*, float*, int64_t, cudaStream_t, bf16*);
PATHBENCH_INSTANTIATE(float)
PATHBENCH_INSTANTIATE(bf16)
#undef PATHBENCH_INSTANTIATE

}  // namespace pathbench::cuda
