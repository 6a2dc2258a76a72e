// Causal softmax attention over [B, H, T, D] with an optional additive log-gate bias
// (ℓ_ij = s·q_i·k_j + g·(c_i − c_j), c = cumulative log forget gates, FoX). Shared by nope, rope
// and fox. The T×T probabilities are never stored: backward recomputes them from the saved
// per-row log-sum-exp, one block of rows at a time.
#pragma once
#include <cstdint>

namespace pathbench {

template <typename T>
struct SoftmaxAttentionArgs {
  int64_t batch_heads = 0;        // B·H independent slices
  int64_t length = 0;             // T
  int64_t head_dim = 0;           // D
  T scale = 0;                    // s, usually 1/sqrt(D)
  const T* q = nullptr;           // [BH, T, D]
  const T* k = nullptr;           // [BH, T, D]
  const T* v = nullptr;           // [BH, T, D]
  const T* cum_log_gate = nullptr;  // [BH, T] or null (no bias)
  T gate_scale = 1;               // g
};

// o: [BH, T, D]; lse: [BH, T] row log-sum-exp of the logits (kept for backward).
template <typename T>
void softmax_attention_forward(const SoftmaxAttentionArgs<T>& a, T* o, T* lse);

// dq, dk, dv: [BH, T, D] (overwritten). d_cum_log_gate: [BH, T] (overwritten) when the bias is on.
template <typename T>
void softmax_attention_backward(const SoftmaxAttentionArgs<T>& a, const T* o, const T* lse, const T* d_o, T* dq,
                                T* dk, T* dv, T* d_cum_log_gate);

}  // namespace pathbench
