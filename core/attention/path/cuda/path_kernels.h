// CUDA twin of path.h: PaTH attention (softmax over logits ℓ_ij = s·q_iᵀ H_i ⋯ H_{j+1} k_j with
// Householder-like H_t = I − β_t w_t w_tᵀ), and PaTH-FoX through the optional log-gate bias, in the
// blocked UT form of docs/design.md §3–4 with chunks of 64 tokens:
//   prep (per chunk): A⁻¹ = (I + strict_lower(diag(β) W Wᵀ))⁻¹ in 16 × 16 blocks (kept for
//     the backward, whose A⁻ᵀ dX is then a matrix product) and X = A⁻¹ diag(β),
//     Y = X W, queries moved to the chunk start Q̂ = Q − tril(Q Wᵀ) Y, keys moved to the chunk end
//     K̂ = K − (X strict_lower(W Kᵀ))ᵀ W, and the chunk's own logits;
//   spans (path_span.cu): the chunks are grouped into spans of s chunks. Each span's whole
//     transform F_j = P_last ⋯ P_first (P = I − Wᵀ X W) and its prefixes R_m = P_{m−1} ⋯ P_first
//     are formed as dense D×D matrices, and keys are moved to their span's end (K̄);
//   forward (per query chunk): scan key chunks leftwards with an online softmax. Inside the query
//     chunk's own span the queries cross each chunk by one rank-64 update U ← U − (U Wᵀ) Y; the
//     keys of an earlier span j then meet the fixed U as K̄, and U crosses span j as U ← U F_j.
//     A forward kept for its backward also materializes the queries at the end of every earlier
//     span (Q⁽ʲ⁾: Q̂_m R_m to their own span's start, then U ← U F_j): a logit whose key lies in an
//     earlier span is then the plain product Q⁽ʲ⁾ K̄ᵀ, and on Hopper (bf16, D = 64 and 128) a
//     softmax-style kernel takes those pairs and the scan only the query chunk's own span;
//   backward (path_backward.cu, path_span.cu): it reads the prep and span outputs and the Q⁽ʲ⁾
//     that the forward left in its workspace. The pairs across spans (all but about 1/spans of
//     them) run through the FlashAttention-2 backward of key_major_backward.cuh. Pairs inside
//     one span take the chunk scan that moves keys rightwards (K̃ ← K̃ − (K̃ Wᵀ) Xᵀ W) storing ≤ s
//     key states per resident block, accumulating dK̂, dV and the gradient of every chunk product
//     P. A chain kernel carries dQ⁽ʲ⁾ back through the F_j (dF_j) and the prefixes (dQ̂), a span
//     kernel turns dF_j and the prefixes' gradients into each chunk's dP, and per-chunk kernels
//     (local a, then local b; one kernel on Hopper at bf16 D = 64) push dQ̂, dK̂, dP and the
//     chunk's own logit gradients through the UT formulas to dq, dk, dw, dβ. Workspaces
//     O(spans·T·D + T·D²/64), never T².
// dw is the gradient with respect to the given (unit) w. Conventions: kernel_common.h.
#pragma once
#include "core/attention/cuda/kernel_common.h"

namespace pathbench::cuda {

template <typename S>
struct PathAttentionCudaArgs {
  int64_t batch_heads = 0;             // B·H
  int64_t length = 0;                  // T
  int64_t head_dim = 0;                // D: 16, 32, 64 or 128
  float scale = 0;                     // s
  const S* q = nullptr;                // [BH, T, D]
  const S* k = nullptr;                // [BH, T, D]
  const S* v = nullptr;                // [BH, T, D]
  const S* w = nullptr;                // [BH, T, D] unit vectors
  const float* beta = nullptr;         // [BH, T] in (0, 2)
  const float* cum_log_gate = nullptr; // [BH, T] or null (PaTH without FoX)
  float gate_scale = 1;                // g
  int64_t span_chunks = 0;             // chunks per span (0: about 0.9·√chunks, path_workspace.cuh)
  bool for_backward = true;            // false: a forward alone (evaluation), which leaves out what
                                       //   only the backward reads; its backward is refused
};

// Bytes of the forward's workspace. The forward leaves there what the backward reads instead of
// recomputing it (the prep outputs, the span transforms and prefixes, K̄, Q⁽ʲ⁾): keep it untouched
// from a forward to its backward. A forward alone (for_backward false) lays out and writes only
// what the forward itself reads: about half the prep kernel's stores, no prefixes and no Q⁽ʲ⁾; it
// scans every pair as the portable scan does, so its outputs may differ from a kept forward's on
// Hopper by rounding.
template <typename S>
size_t path_attention_forward_workspace_bytes(const PathAttentionCudaArgs<S>& a);

// o: [BH, T, D]; lse: [BH, T] natural-log row log-sum-exp (kept for backward).
template <typename S>
void path_attention_forward(const PathAttentionCudaArgs<S>& a, S* o, float* lse, Workspace forward_ws,
                            cudaStream_t stream);

// Bytes of the backward's own workspace (besides the forward's).
template <typename S>
size_t path_attention_backward_workspace_bytes(const PathAttentionCudaArgs<S>& a);

// forward_ws: the workspace of the forward that produced o and lse, with the same args.
// dq, dk, dv, dw: [BH, T, D]; dbeta: [BH, T]; d_cum_log_gate: [BH, T] when the bias is on (all
// overwritten).
template <typename S>
void path_attention_backward(const PathAttentionCudaArgs<S>& a, const S* o, const float* lse, Workspace forward_ws,
                             const S* d_o, S* dq, S* dk, S* dv, S* dw, float* dbeta, float* d_cum_log_gate,
                             Workspace ws, cudaStream_t stream);

}  // namespace pathbench::cuda
