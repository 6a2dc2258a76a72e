// CUDA twins of path_projection.cpp's elementwise stages: the causal depthwise convolution (width
// 3, no bias), SiLU and per-head L2 normalization that turn the low-rank projection y into the unit
// vectors w, and β = 2·σ(x·u_βᵀ + b_β) with the optional clip; each with its backward. The matrix
// products run through cuda::linear_* (core/attention/path/cuda/path_encoding.cpp). Device pointers; work queued on `stream`.
// Implemented in projection_kernels.cu.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace pathbench::cuda {

// y: [B, T, H·D]; conv: [H·D, 3]. Writes z [B, T, H·D] (the convolution, kept for backward),
// norm [B, T, H] (‖silu(z)‖ per head) and w [B, H, T, D] = silu(z) / max(norm, 1e-12) in storage S;
// z and norm may be null (a forward that no backward follows) and are then not written.
template <typename S>
void path_w_forward(const float* y, const float* conv, float* z, float* norm, S* w, int64_t batch, int64_t length,
                    int64_t heads, int64_t head_dim, cudaStream_t stream);

// dw: [B, H, T, D] → dz [B, T, H·D] (overwritten), through the normalization and the SiLU.
template <typename S>
void path_w_backward(const float* z, const float* norm, const S* dw, float* dz, int64_t batch, int64_t length,
                     int64_t heads, int64_t head_dim, cudaStream_t stream);

// dy [B, T, H·D] = the convolution's input gradient (overwritten), in fp32 (dy) and/or rounded to
// bf16 (dy16; either may be null); dconv [H·D, 3] += its kernel gradient. scratch:
// kColumnScratchPerColumn (ops.h) · 3·H·D floats.
void path_conv_backward(const float* y, const float* conv, const float* dz, float* dy, __nv_bfloat16* dy16,
                        float* dconv, float* scratch, int64_t batch, int64_t length, int64_t channels,
                        cudaStream_t stream);

// pre: [B, T, H] holds x·u_βᵀ on entry and x·u_βᵀ + b_β afterwards; beta [B, H, T] = 2σ(pre),
// at most 2 − clip_eps when clip_eps > 0.
void path_beta_forward(float* pre, const float* bias, float* beta, int64_t batch, int64_t length, int64_t heads,
                       double clip_eps, cudaStream_t stream);

// dpre [B, T, H] = dbeta · 2σ(1 − σ) (0 where clipped; overwritten), and its bf16 copy when dpre16 is
// given; dbias [H] += Σ dpre. scratch: kColumnScratchPerColumn · H floats.
void path_beta_backward(const float* pre, const float* dbeta, float* dpre, __nv_bfloat16* dpre16, float* dbias,
                        float* scratch, int64_t batch, int64_t length, int64_t heads, double clip_eps,
                        cudaStream_t stream);

}  // namespace pathbench::cuda
