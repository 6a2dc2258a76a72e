// CUDA twin of softmax_attention.h: fused causal softmax attention over [BH, T, D] with the optional
// FoX log-gate bias (ℓ_ij = s·q_i·k_j + g·(c_i − c_j)), FlashAttention-2 style. Forward keeps only
// the per-row log-sum-exp; backward recomputes the probabilities block by block, so no T×T buffer
// exists in device memory. Serves nope, rope (queries/keys rotated first, rope_kernels.h) and fox.
// Conventions (storage types, device pointers, workspace): kernel_common.h.
#pragma once
#include "core/attention/cuda/kernel_common.h"

namespace pathbench::cuda {

template <typename S>
struct SoftmaxAttentionCudaArgs {
  int64_t batch_heads = 0;             // B·H independent slices
  int64_t length = 0;                  // T (any T ≥ 1)
  int64_t head_dim = 0;                // D: 16, 32, 64 or 128
  float scale = 0;                     // s, usually 1/sqrt(D)
  const S* q = nullptr;                // [BH, T, D]
  const S* k = nullptr;                // [BH, T, D]
  const S* v = nullptr;                // [BH, T, D]
  const float* cum_log_gate = nullptr; // [BH, T] or null (no bias)
  float gate_scale = 1;                // g
};

// o: [BH, T, D]; lse: [BH, T] natural-log row log-sum-exp of the logits (kept for backward).
template <typename S>
void softmax_attention_forward(const SoftmaxAttentionCudaArgs<S>& a, S* o, float* lse, cudaStream_t stream);

template <typename S>
size_t softmax_attention_backward_workspace_bytes(const SoftmaxAttentionCudaArgs<S>& a);

// dq, dk, dv: [BH, T, D] (overwritten); d_cum_log_gate: [BH, T] (overwritten) when the bias is on.
template <typename S>
void softmax_attention_backward(const SoftmaxAttentionCudaArgs<S>& a, const S* o, const float* lse, const S* d_o,
                                S* dq, S* dk, S* dv, float* d_cum_log_gate, Workspace ws, cudaStream_t stream);

}  // namespace pathbench::cuda
