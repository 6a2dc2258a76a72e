// What the key-major softmax-attention backward kernels share (key_major_backward.cuh: mma.sync, any
// GPU; key_major_backward_hopper.cuh: wgmma, sm_90a): their arguments and the per-element step from
// the products Sᵀ = K Qᵀ, dPᵀ = V dOᵀ to P and dS. The FoX bias g·(c_i − c_j) only adds −g·Σ_i dS_ij
// to the key's gate gradient (the row sums of dS vanish: Σ_j P_ij (dP_ij − δ_i) = 0).
#pragma once
#include "core/attention/cuda/tiles.cuh"

namespace pathbench::cuda {

// Where the kernel reads and writes, per slice bh (of batch_heads) and key block kb. Token t of a
// slice is row t of every [.., D] tensor named here; `*_slice` are the row counts between slices.
// Causal (span_blocks = 0): key block kb meets query blocks kb … last, key ≤ query. Spans
// (span_blocks = s > 0): key block kb of span j = kb / s meets every query of the blocks after its
// span, whose queries for that span are q + j·q_span (PaTH: queries moved to span j's end).
// S: the inputs' storage; O: dK's and dV's; A: dQ's accumulator, fp32 unless the caller accepts bf16
// rounding of each atomic add (PaTH's dQ⁽ʲ⁾ at bf16: half the bytes of its zeroing, atomics and reads).
template <typename S, typename O, typename A = float>
struct KeyMajorBackwardArgs {
  int64_t batch_heads = 0, length = 0;  // BH, T
  float scale = 0, gate_scale = 1;      // s, g
  int span_blocks = 0;
  const S* k = nullptr;  // [BH, k_slice, D]
  int64_t k_slice = 0;
  const S* q = nullptr;   // [BH, q_slice, D], span j at + j·q_span rows
  A* dq = nullptr;        // zeroed, same layout as q: receives s·dS·K
  int64_t q_slice = 0, q_span = 0;
  const S* v = nullptr;             // [BH, T, D]
  const S* d_o = nullptr;           // [BH, T, D]
  const float* lse = nullptr;       // [BH, T] natural log
  const float* delta = nullptr;     // [BH, T] rowsum(dO ∘ O)
  const float* gate = nullptr;      // [BH, T] cumulative log gates or null
  O* dk = nullptr;                  // [BH, out_slice, D] s·dSᵀ Q
  O* dv = nullptr;                  // [BH, out_slice, D] Pᵀ dO
  float* d_gate = nullptr;          // [BH, out_slice] −g·Σ_i dS_ij, or null
  int64_t out_slice = 0;            // ≥ T; rows past T are written as zeros
};

namespace detail {

// A query block's per-row values in shared memory: lse (natural log), δ, and the cumulative log
// gates (read only with gates).
struct QueryRows {
  float *lse, *delta, *gate;
};

template <bool kMasked, bool kCausal, bool kExactExp, bool kGated>
__device__ __forceinline__ void softmax_gradients_step(float (&p)[8][4], float (&ds)[8][4], float (&col_sum)[2],
                                                       const QueryRows& rows, const float* key_gate, int q0, int k0,
                                                       int T, float scale2, float gate2) {
  using namespace tiles;
  const int w = warp_id();
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int il = acc_col(n, e), jl = 16 * w + acc_row(e);
      const bool visible = !kMasked || (q0 + il < T && (kCausal ? k0 + jl <= q0 + il : k0 + jl < T));
      float xv = p[n][e] * scale2 - rows.lse[il] * kLog2e;
      if constexpr (kGated) xv += gate2 * (rows.gate[il] - key_gate[jl]);
      const float pv = visible ? (kExactExp ? exp2f(xv) : exp2_ftz(xv)) : 0.f;
      p[n][e] = pv;
      ds[n][e] = pv * (ds[n][e] - rows.delta[il]);
      if constexpr (kGated) col_sum[e >> 1] += ds[n][e];
    }
}

// This warp's 16 keys (rows) × 64 queries (columns) of the pair of blocks (k0, q0): p holds K·Qᵀ
// and ds holds V·dOᵀ on entry; on return p = P = exp(s·qᵀk + g·(c_i − c_j) − lse) and
// ds = dS = P ∘ (dP − δ), and, when gated, col_sum[r] has gained the sums of dS over this block's
// queries for the thread's two key rows. key_gate: the key block's cumulative log gates (read when
// gated). kMasked: pairs that do not count get P = 0 (the other blocks need no test); kExactExp:
// exp2f instead of the flushing approximation (see key_major_backward_kernel).
template <bool kMasked, bool kCausal, bool kExactExp>
__device__ __forceinline__ void softmax_gradients(float (&p)[8][4], float (&ds)[8][4], float (&col_sum)[2],
                                                  const QueryRows& rows, bool gated, const float* key_gate,
                                                  int q0, int k0, int T, float scale2, float gate2) {
  if (gated)
    softmax_gradients_step<kMasked, kCausal, kExactExp, true>(p, ds, col_sum, rows, key_gate, q0, k0, T, scale2, gate2);
  else
    softmax_gradients_step<kMasked, kCausal, kExactExp, false>(p, ds, col_sum, rows, key_gate, q0, k0, T, scale2,
                                                               gate2);
}

}  // namespace detail
}  // namespace pathbench::cuda
