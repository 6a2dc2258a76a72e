// PaTH attention kernels: softmax attention whose logits carry a data-dependent product of
// Householder-like transforms, ℓ_ij = s·q_iᵀ H_i H_{i−1} ⋯ H_{j+1} k_j (+ g·(c_i − c_j) with a FoX
// gate), H_t = I − β_t w_t w_tᵀ, ‖w_t‖ = 1, β_t ∈ (0, 2). docs/design.md §2–3 has the derivations.
//
// Two exact implementations of the same op, both O(T²·D) with no T×T×D memory:
// - the blocked UT form (path_attention_forward/backward, the fast path): chunks of C tokens, each
//   chunk's product as I − Wᵀ X W with X from a triangular solve, queries moved to chunk starts and
//   keys to chunk ends, so everything is matrix products;
// - the per-query recurrences (…_per_query), the readable reference the tests compare against.
// And the decoding step, which keeps the keys transformed in place.
#pragma once
#include <cstdint>
#include <vector>

namespace pathbench {

template <typename T>
struct PathAttentionArgs {
  int64_t batch_heads = 0, length = 0, head_dim = 0;  // BH, T, D
  T scale = 0;                                         // s, usually 1/sqrt(D)
  const T *q = nullptr, *k = nullptr, *v = nullptr;    // [BH, T, D]
  const T* w = nullptr;                                // [BH, T, D] unit Householder directions
  const T* beta = nullptr;                             // [BH, T] in (0, 2)
  const T* cum_log_gate = nullptr;                     // [BH, T] cumulative log forget gates, or null
  T gate_scale = 1;                                    // g
};

// The chunk size of the blocked form used by path_attention_forward/backward.
constexpr int64_t kPathChunk = 32;

// o: [BH, T, D]; lse: [BH, T] row log-sum-exp of the logits (kept for backward).
template <typename T>
void path_attention_forward(const PathAttentionArgs<T>& a, T* o, T* lse);

// Given d_o: dq, dk, dv, dw [BH, T, D] and dbeta [BH, T] (all overwritten); d_cum_log_gate [BH, T]
// (overwritten) when the gate is on, else ignored (may be null). dw is the gradient with respect to
// w as given (its unit norm is not enforced here).
template <typename T>
void path_attention_backward(const PathAttentionArgs<T>& a, const T* o, const T* lse, const T* d_o, T* dq, T* dk,
                             T* dv, T* dw, T* dbeta, T* d_cum_log_gate);

// The blocked form with an explicit chunk size (tests use small chunks to cover many chunks).
template <typename T>
void path_attention_forward_chunked(const PathAttentionArgs<T>& a, int64_t chunk, T* o, T* lse);
template <typename T>
void path_attention_backward_chunked(const PathAttentionArgs<T>& a, int64_t chunk, const T* o, const T* lse,
                                     const T* d_o, T* dq, T* dk, T* dv, T* dw, T* dbeta, T* d_cum_log_gate);

// The per-query recurrences (reference): u ← q_i; for j = i … 0: ℓ_ij = s·u·k_j, u ← H_j u; and
// their exact backward. Same contract as path_attention_forward/backward.
template <typename T>
void path_attention_forward_per_query(const PathAttentionArgs<T>& a, T* o, T* lse);
template <typename T>
void path_attention_backward_per_query(const PathAttentionArgs<T>& a, const T* o, const T* lse, const T* d_o, T* dq,
                                       T* dk, T* dv, T* dw, T* dbeta, T* d_cum_log_gate);

// Decoding: the cache of BH sequences. Cached keys are kept transformed to the newest position:
// key j holds H_t ⋯ H_{j+1} k_j after token t.
template <typename T>
struct PathDecodeCache {
  int64_t batch_heads = 0, head_dim = 0, length = 0;
  std::vector<std::vector<T>> keys, values;  // per slice [t, D]
  std::vector<std::vector<T>> cum_log_gate;  // per slice [t] (only with the gate)
};

template <typename T>
PathDecodeCache<T> path_decode_start(int64_t batch_heads, int64_t head_dim);

// One token per slice: q, k, v, w [BH, D], beta [BH], cum_log_gate [BH] (c_t, or null without the
// gate). Every cached key becomes H_t k (k ← k − β_t (w_t·k) w_t), k_t is appended untransformed,
// then o [BH, D] = softmax_j(s·q_t·k_j + g·(c_t − c_j)) v_j.
template <typename T>
void path_decode_step(PathDecodeCache<T>& cache, const T* q, const T* k, const T* v, const T* w, const T* beta,
                      const T* cum_log_gate, T scale, T gate_scale, T* o);

}  // namespace pathbench
