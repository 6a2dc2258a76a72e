// Float64 brute-force references for stick-breaking and PaTH that the GPU tests hold the kernels to:
// direct formulas, O(T²·D) per slice, for tests only (test_attention_reference.cpp checks them
// against the CPU kernels and finite differences). Inputs and outputs are [BH, T, D] (per-token
// vectors [BH, T]) row-major, like the kernels'.
#pragma once
#include <cstdint>
#include <vector>

namespace pathbench::reference {

struct AttentionShape {
  int64_t batch_heads = 0, length = 0, head_dim = 0;
};

// Stick-breaking: log a_ij = log σ(z_ij) − Σ_{j<l≤i} softplus(z_il), z = s·q_i·k_j.
void stick_breaking_forward(const AttentionShape& s, double scale, bool remainder_to_current, const double* q,
                            const double* k, const double* v, double* o);
void stick_breaking_backward(const AttentionShape& s, double scale, bool remainder_to_current, const double* q,
                             const double* k, const double* v, const double* d_o, double* dq, double* dk, double* dv);

// PaTH (+ optional FoX bias when gate is not null): ℓ_ij = s·q_iᵀ H_i ⋯ H_{j+1} k_j + g·(c_i − c_j).
struct PathInputs {
  const double *q = nullptr, *k = nullptr, *v = nullptr, *w = nullptr, *beta = nullptr, *gate = nullptr;
  double scale = 0, gate_scale = 1;
};
void path_forward(const AttentionShape& s, const PathInputs& in, double* o, double* lse);
// Per-query exact backward (docs/design.md §3); dgate only when in.gate is set.
void path_backward(const AttentionShape& s, const PathInputs& in, const double* o, const double* lse,
                   const double* d_o, double* dq, double* dk, double* dv, double* dw, double* dbeta, double* dgate);

}  // namespace pathbench::reference
