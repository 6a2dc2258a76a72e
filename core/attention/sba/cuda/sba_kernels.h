// CUDA twin of sba.h: stick-breaking attention (no softmax), in log space and online:
// log a_ij = log σ(z_ij) − Σ_{j<l≤i} softplus(z_il), z = s·q_i·k_j, o_i = Σ_j a_ij v_j (+ the
// remainder (1 − Σ_j a_ij)·v_i when remainder_to_current). The forward scans keys from the diagonal
// leftwards, so the sum of softplus terms is a running carry, and stops at the key block past which
// every row's weights are below 2⁻¹²⁸ (zero in float arithmetic); it keeps each row's sum over the
// keys scanned and where it stopped, with which the backward scans the same keys rightwards in one
// pass; nothing of size T×T is stored. The time thus depends on the data: rows whose sticks break
// near the query (a softplus sum of 128 bits, e.g. ~110 keys of logits N(0, 1)) cost the diagonal's
// few blocks, rows that reach far cost all of theirs.
// Conventions (storage types, device pointers, workspace): kernel_common.h.
#pragma once
#include "core/attention/cuda/kernel_common.h"

namespace pathbench::cuda {

template <typename S>
struct StickBreakingCudaArgs {
  int64_t batch_heads = 0;  // B·H
  int64_t length = 0;       // T
  int64_t head_dim = 0;     // D: 16, 32, 64 or 128
  float scale = 0;          // s
  const S* q = nullptr;     // [BH, T, D]
  const S* k = nullptr;     // [BH, T, D]
  const S* v = nullptr;     // [BH, T, D]
  bool remainder_to_current = false;
};

// What the forward keeps for the backward (`saved`): each row's Σ_j softplus(z_ij) over the keys
// scanned (j from the query block's first key block to i) in log₂ units (·log₂e) as a float pair
// hi + lo, [2, BH, T] floats, then each query block's first key block, [BH, ⌈T/64⌉] ints.
template <typename S>
size_t stick_breaking_saved_bytes(const StickBreakingCudaArgs<S>& a);

// o: [BH, T, D]; saved: written.
template <typename S>
void stick_breaking_forward(const StickBreakingCudaArgs<S>& a, S* o, Workspace saved, cudaStream_t stream);

template <typename S>
size_t stick_breaking_backward_workspace_bytes(const StickBreakingCudaArgs<S>& a);

// saved: the forward's, read; dq, dk, dv: [BH, T, D] (overwritten). The weights are recomputed.
template <typename S>
void stick_breaking_backward(const StickBreakingCudaArgs<S>& a, Workspace saved, const S* d_o, S* dq, S* dk, S* dv,
                             Workspace ws, cudaStream_t stream);

}  // namespace pathbench::cuda
