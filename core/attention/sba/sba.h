// Stick-breaking attention (SBA): z_ij = s·q_i·k_j, β_ij = σ(z_ij), and for keys j ≤ i
// a_ij = β_ij · Π_{j<l≤i} (1 − β_il) (the current token is a key; the nearest keys break the stick
// first), o_i = Σ_j a_ij v_j. No softmax and no other position information. Computed in log space:
// log a_ij = logσ(z_ij) − Σ_{j<l≤i} softplus(z_il). Σ_j a_ij ≤ 1; the remainder 1 − Σ_j a_ij is
// dropped, or with remainder_to_current added as (1 − Σ_j a_ij)·v_i.
#pragma once
#include <cstdint>

namespace pathbench {

template <typename T>
struct StickBreakingArgs {
  int64_t batch_heads = 0, length = 0, head_dim = 0;  // BH, T, D
  T scale = 0;                                         // s, usually 1/sqrt(D)
  const T *q = nullptr, *k = nullptr, *v = nullptr;    // [BH, T, D]
  bool remainder_to_current = false;
};

// o: [BH, T, D].
template <typename T>
void stick_breaking_forward(const StickBreakingArgs<T>& a, T* o);

// dq, dk, dv: [BH, T, D] (overwritten). Recomputes the weights; o is not needed by this
// implementation but is part of the kernel interface.
template <typename T>
void stick_breaking_backward(const StickBreakingArgs<T>& a, const T* o, const T* d_o, T* dq, T* dk, T* dv);

// The attention weights of one slice, a: [T, T] (zero above the diagonal), for tests and analysis.
template <typename T>
void stick_breaking_weights(const StickBreakingArgs<T>& a, int64_t slice, T* weights);

}  // namespace pathbench
