// AdamW update and global gradient norm on the GPU (core/optim/cuda/adamw.h); same arithmetic as adamw.cpp.
#include "core/cuda/reduce.cuh"
#include "core/optim/cuda/adamw.h"

namespace pathbench::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void grad_norm_partial_kernel(const float* grads, int64_t n, double* partial) {
  __shared__ double scratch[32];
  double ss = 0.0;
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += int64_t(kGradNormBlocks) * kThreads)
    ss += double(grads[i]) * double(grads[i]);
  ss = block_sum(ss, scratch);
  if (threadIdx.x == 0) partial[blockIdx.x] = ss;
}

__global__ void grad_norm_finish_kernel(const double* partial, double max_norm, double* norm, float* scale) {
  __shared__ double scratch[32];
  const double ss = block_sum(partial[threadIdx.x], scratch);
  if (threadIdx.x == 0) {
    const double value = sqrt(ss);
    *norm = value;
    *scale = max_norm > 0 && value > max_norm ? float(max_norm / (value + 1e-12)) : 1.0f;
  }
}

__global__ void adamw_update_kernel(float* params, __nv_bfloat16* params_bf16, float* grads, float* m, float* v,
                                    const uint8_t* decay, const float* scale, const AdamWStepTerms* terms,
                                    AdamWConstants k, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = grads[i] * *scale;
  grads[i] = g;
  const AdamWStepTerms t = *terms;
  const float mi = k.beta1 * m[i] + (1.0f - k.beta1) * g;
  const float vi = k.beta2 * v[i] + (1.0f - k.beta2) * g * g;
  m[i] = mi;
  v[i] = vi;
  float p = params[i];
  if (decay[i]) p -= t.decay * p;
  p -= t.step_size * mi / (sqrtf(vi) * t.inv_sqrt_bc2 + k.eps);
  params[i] = p;
  if (params_bf16) params_bf16[i] = __float2bfloat16_rn(p);
}

}  // namespace

static_assert(kGradNormBlocks == kThreads, "the finishing block has one thread per partial sum");

void grad_norm_and_clip_scale(const float* grads, int64_t n, double max_norm, double* partial, double* norm,
                              float* scale, cudaStream_t stream) {
  grad_norm_partial_kernel<<<kGradNormBlocks, kThreads, 0, stream>>>(grads, n, partial);
  PATHBENCH_CUDA_CHECK_LAUNCH("grad_norm_partial_kernel");
  grad_norm_finish_kernel<<<1, kGradNormBlocks, 0, stream>>>(partial, max_norm, norm, scale);
  PATHBENCH_CUDA_CHECK_LAUNCH("grad_norm_finish_kernel");
}

void adamw_update(float* params, __nv_bfloat16* params_bf16, float* grads, float* m, float* v, const uint8_t* decay,
                  const float* scale, const AdamWStepTerms* terms, AdamWConstants constants, int64_t n,
                  cudaStream_t stream) {
  adamw_update_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(params, params_bf16, grads, m, v, decay, scale,
                                                                         terms, constants, n);
  PATHBENCH_CUDA_CHECK_LAUNCH("adamw_update_kernel");
}

}  // namespace pathbench::cuda
