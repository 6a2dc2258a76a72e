// GPU twins of adamw.h's update and global-norm clipping, for the CUDA trainer. The per-step values
// (learning-rate terms, the clip scale) are read from device memory, so one captured CUDA graph
// serves every step. Device pointers; queued on `stream`. Implemented in adamw.cu.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/optim/adamw.h"

namespace pathbench::cuda {

// adamw_terms (adamw.h) rounded to float, as AdamW<float>::step uses them.
struct AdamWStepTerms {
  float step_size, inv_sqrt_bc2, decay;
  explicit AdamWStepTerms(const AdamWTerms& t = {0, 0, 0})
      : step_size(float(t.step_size)), inv_sqrt_bc2(float(t.inv_sqrt_bc2)), decay(float(t.decay)) {}
};

struct AdamWConstants {
  float beta1, beta2, eps;
};

// Partial sums of the norm: doubles.
constexpr int kGradNormBlocks = 256;

// norm = ‖grads‖₂ (double, summed in a fixed order); scale = max_norm / (norm + 1e-12) when
// max_norm > 0 and norm > max_norm, else 1. partial: kGradNormBlocks doubles.
void grad_norm_and_clip_scale(const float* grads, int64_t n, double max_norm, double* partial, double* norm,
                              float* scale, cudaStream_t stream);

// grads ← grads · scale (as clip_grad_norm does), then the AdamW update of params, m and v with
// decoupled weight decay where decay[i] is 1. Also refreshes params_bf16 when it is not null.
void adamw_update(float* params, __nv_bfloat16* params_bf16, float* grads, float* m, float* v, const uint8_t* decay,
                  const float* scale, const AdamWStepTerms* terms, AdamWConstants constants, int64_t n,
                  cudaStream_t stream);

}  // namespace pathbench::cuda
