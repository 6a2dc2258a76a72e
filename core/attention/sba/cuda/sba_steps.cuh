// The per-element steps of the stick-breaking kernels (sba_kernels.cu: mma.sync, any GPU;
// sba_hopper.cuh: wgmma, sm_90a), on the warp's 16 query rows × 64 keys of one key block in the
// accumulator layout of tiles.cuh: the key order of the K and V tiles, the logits' sigmoid terms, the
// row prefix and suffix sums, and the forward's and backward's whole step from the products q·k, dO·v
// to the weights and gradients.
// Logits and softplus sums are in log₂ units (·log₂e), so each weight is one 2ˣ: with u = z·log₂e,
// log₂ a_ij = log₂σ(z_ij) − Σ_{j<k≤i} log₂(1 + 2^u_ik) = u_ij − Σ_{j≤k≤i} log₂(1 + 2^u_ik), since
// log₂σ(z) = u − log₂(1 + 2ᵘ): the steps take inclusive sums of the softplus terms and never form log₂σ.
#pragma once
#include "core/attention/cuda/tiles.cuh"
#include "core/attention/sba/cuda/sba_kernels.h"

namespace pathbench::cuda::sba {

using namespace tiles;

// The kernels store a key block's K and V rows in the order that gives each thread of a quad 16
// consecutive keys of every product row: accumulator column c = 8n + 2t + b (tile n, thread t of the
// quad, b = 0, 1) holds key 16t + 2n + b, so the row sums below run along a thread's own registers
// and meet across the quad only once. Tile row r of K and V holds key KeyOrder{}(r) of the block;
// products over the keys (o += a V, dq += dz K) need nothing else, products whose rows are keys (dK,
// dV) write row r to key KeyOrder{}(r).
struct KeyOrder {
  __device__ constexpr int operator()(int c) const { return 16 * ((c >> 1) & 3) + 2 * (c >> 3) + (c & 1); }
};
// The same for the 16 rows of warp w's part of a [64 keys, ·] product (rows 16w …).
struct WarpKeyOrder {
  int w;
  __device__ int operator()(int r) const { return KeyOrder{}(16 * w + r); }
};
// The key (0..63 in its block) of accumulator element e of tile n.
__device__ __forceinline__ int acc_key(int n, int e) { return 16 * (lane_id() % 4) + 2 * n + (e & 1); }

// log₂(1 + 2ᵘ) = softplus(z)·log₂e for u = z·log₂e, from t = 2^(−|u|) and log₂(1 + t): the
// forward's term. bf16 storage (kApprox) takes the hardware's approximate 2ˣ and log₂, whose errors
// (≈ 2⁻²² absolute) lie far below bf16's rounding; fp32 keeps the accurate log1p.
template <bool kApprox>
__device__ __forceinline__ float softplus_term(float u) {
  const float t = exp2_ftz(-fabsf(u));
  return fmaxf(u, 0.f) + (kApprox ? log2_ftz(1.f + t) : log1pf(t) * kLog2e);
}

// The backward's terms: the softplus and σ(z). bf16 (kApprox) forms both from e = 2⁻ᵘ, softplus =
// u + log₂(1 + e) and σ = 1/(1 + e) (the approximate reciprocal), with no branch on the sign of u (u
// held above −126 so that e stays finite; the softplus of such u is below 2⁻¹²⁶ either way). Its
// softplus carries up to an ulp of |u| where u < 0: a float32 model of 2,000 far-reaching keys puts
// the weights' error at 2.5·10⁻⁶ (10⁻⁶ for softplus_term's form), far below bf16's rounding. fp32
// keeps t = 2^(−|u|), the accurate log1p and division.
struct SigmoidTerms {
  float softplus, sigmoid;
};
template <bool kApprox>
__device__ __forceinline__ SigmoidTerms sigmoid_terms(float u) {
  if constexpr (kApprox) {
    const float held = fmaxf(u, -126.f), e = exp2_ftz(-held);
    return {held + log2_ftz(1.f + e), rcp_ftz(1.f + e)};
  } else {
    const float t = exp2_ftz(-fabsf(u));
    const float r = 1.f / (1.f + t);
    return {fmaxf(u, 0.f) + log1pf(t) * kLog2e, u >= 0.f ? r : t * r};
  }
}

// The warp's 16 × 64 products q·k become u = q·k·scale2 (z·log₂e for z = s·q·k) in place;
// sp ← log₂(1 + 2ᵘ), and for the backward (kSigmoid) sig ← σ(z).
// kMasked (the diagonal block, or a block with rows past T): keys right of the query, and rows past
// T, get u = −∞ (no weight) and sp = 0. Other blocks need no test.
template <bool kApprox, bool kMasked, bool kSigmoid>
__device__ __forceinline__ void stick_terms(float (&z)[8][4], float (&sp)[8][4], float (&sig)[8][4], float scale2,
                                            int row0, int k0, int T) {
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float u = z[n][e] * scale2;
      float softplus;
      if constexpr (kSigmoid) {
        const SigmoidTerms st = sigmoid_terms<kApprox>(u);
        softplus = st.softplus;
        sig[n][e] = st.sigmoid;
      } else {
        softplus = softplus_term<kApprox>(u);
      }
      const int i = row0 + acc_row(e), j = k0 + acc_key(n, e);
      const bool visible = !kMasked || (j <= i && i < T);
      sp[n][e] = visible ? softplus : 0.f;
      z[n][e] = visible ? u : -INFINITY;
    }
}

// For each of the thread's two rows, an inclusive sum across the block's 64 keys (KeyOrder: thread t
// of the quad holds keys 16t … 16t+15, key 16t + 2n + b in v[n][2r + b]), from a start value:
// out = start + Σ of v over the key itself and those after it (kSuffix) or before it; total = the
// row's sum of v (without start), the same in each thread of the quad. A running sum over the
// thread's own 16 keys, then two butterfly shuffles for the sum of the threads before this one in
// the scan and the row's total.
template <bool kSuffix>
__device__ __forceinline__ void row_inclusive_sums(const float (&v)[8][4], const float (&start)[2],
                                                   float (&out)[8][4], float (&total)[2]) {
  const int t = lane_id() % 4;
  // 1 where the butterfly partner (lane t ^ 1, then the pair t ^ 2) comes before this thread in the scan
  const float before1 = (kSuffix ? !(t & 1) : (t & 1)) ? 1.f : 0.f;
  const float before2 = (kSuffix ? !(t & 2) : (t & 2)) ? 1.f : 0.f;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float run = 0.f;  // the thread's keys passed so far
#pragma unroll
    for (int step = 0; step < 16; ++step) {
      const int key = kSuffix ? 15 - step : step;  // 16t + key
      run += v[key >> 1][2 * r + (key & 1)];
      out[key >> 1][2 * r + (key & 1)] = run;
    }
    const float y1 = __shfl_xor_sync(kFullMask, run, 1);
    const float pair = run + y1;  // the sum of threads t and t ^ 1
    const float y2 = __shfl_xor_sync(kFullMask, pair, 2);
    total[r] = pair + y2;
    const float offset = start[r] + fmaf(y2, before2, before1 * y1);
#pragma unroll
    for (int n = 0; n < 8; ++n) {
      out[n][2 * r] += offset;
      out[n][2 * r + 1] += offset;
    }
  }
}

// hi + lo ← hi + lo + x with the rounding error of hi + x kept in lo (Knuth's two-sum).
__device__ __forceinline__ void add_compensated(float& hi, float& lo, float x) {
  const float s = __fadd_rn(hi, x), xs = __fsub_rn(s, hi);
  lo += __fadd_rn(__fsub_rn(hi, __fsub_rn(s, xs)), __fsub_rn(x, xs));
  hi = s;
}

// The forward's running values for the thread's two rows: the softplus sum of the keys scanned
// (carry + carry_lo, compensated; the same in each thread of the quad).
struct ForwardRows {
  float carry[2] = {0.f, 0.f}, carry_lo[2] = {0.f, 0.f};
};

// What the sticks leave of row i, 1 − Σ_j a_ij = Π_{j≤i} σ(−z_ij) = 2^(−S_i) for S_i the row's
// softplus sum (log₂ units; the keys the forward did not scan leave at most 2⁻¹²⁸, flushed to 0):
// the remainder's weight, without a sum of the weights that cancels where they approach 1.
__device__ __forceinline__ float stick_left(float sum_hi, float sum_lo) { return exp2_ftz(-(sum_hi + sum_lo)); }

// What the forward keeps for the backward (stick_breaking_saved_bytes): each row's softplus sum over
// the keys scanned, as a float pair hi + lo ([BH, T] each), and each query block's leftmost key block
// scanned ([BH, ⌈T/64⌉]; 0 unless the scan stopped where the weights vanish).
struct SavedSums {
  float* hi;
  float* lo;
  int* first_block;
  int query_blocks;  // ⌈T/64⌉, a slice's query blocks
  // The first key block of query block qb of this kernel block's slice (blockIdx.y).
  __device__ int& first_block_of(int qb) const { return first_block[int64_t(blockIdx.y) * query_blocks + qb]; }
};

// A softplus sum (log₂ units) past which every weight further left lies below 2⁻¹²⁸, under float's
// normal range: the weights' 2ˣ (which flushes subnormals) would make them exactly zero, and so would
// their gradients in the backward, whose sums over earlier keys start at zero.
constexpr float kVanishingCarry = 128.f;

// Have the thread's two rows (rows past T count as done) no weight left in the key blocks not yet
// scanned? The forward stops a query block's scan when every row of it says so.
__device__ __forceinline__ bool rows_vanished(const ForwardRows& rows, int row0, int T) {
  return (rows.carry[0] >= kVanishingCarry || row0 + acc_row(0) >= T) &&
         (rows.carry[1] >= kVanishingCarry || row0 + acc_row(2) >= T);
}

// The forward's step over key block k0 for the warp's 16 rows from row0: z holds q·k on entry and
// the weights a on return. masked as kMasked for stick_terms (only its terms are in two copies: the
// whole step in two raised the registers from 128 to 148 at D = 64).
template <bool kApprox>
__device__ __forceinline__ void forward_weights(float (&z)[8][4], ForwardRows& rows, bool masked, float scale2,
                                                int row0, int k0, int T) {
  float sp[8][4], unused[8][4], after[8][4], total[2];  // unused: σ (the backward's)
  if (masked)
    stick_terms<kApprox, true, false>(z, sp, unused, scale2, row0, k0, T);
  else
    stick_terms<kApprox, false, false>(z, sp, unused, scale2, row0, k0, T);
  row_inclusive_sums<true>(sp, rows.carry, after, total);  // after: the carry, the key and those to its right
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) z[n][e] = exp2_ftz(z[n][e] - after[n][e]);
  add_compensated(rows.carry[0], rows.carry_lo[0], total[0]);
  add_compensated(rows.carry[1], rows.carry_lo[1], total[1]);
}

// The end of the forward's scan, which stopped at key block first: waits for the copies a stop left
// in flight, then saves the rows' softplus sums and the query block's first key block.
__device__ __forceinline__ void save_forward_sums(const SavedSums& saved, const ForwardRows& rows,
                                                  const QueryBlock& blk, int first) {
  cp_async_wait<0>();
  if (threadIdx.x == 0) saved.first_block_of(blk.qb) = first;
  store_row_pair(saved.hi + blk.base + blk.row0, rows.carry, blk.T - blk.row0);
  store_row_pair(saved.lo + blk.base + blk.row0, rows.carry_lo, blk.T - blk.row0);
}

// The backward's running values for the thread's two rows: r·dO_i·v_i (r = 1 when the remainder
// goes to the current token, else 0), the softplus sum of the keys not yet scanned (later +
// later_lo: the forward's saved sum at the start), Σ g over the keys scanned, and the stick's rest
// 1 − Σ_j a_ij (stick_left).
struct BackwardRows {
  float rem_do_v[2], later[2], later_lo[2], g_carry[2] = {0.f, 0.f}, rest[2];
};

// The backward's starting values of the warp's rows from row0 (slice rows from base).
template <int D, typename S>
__device__ __forceinline__ BackwardRows backward_rows(const StickBreakingCudaArgs<S>& a, const SavedSums& saved,
                                                      const S* d_o, int64_t base, int row0) {
  BackwardRows rows;
  const int T = int(a.length);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = row0 + acc_row(2 * r);
    float gv = 0.f;  // dO_i·v_i, each thread of the quad taking every 4th column
    rows.later[r] = rows.later_lo[r] = 0.f;
    if (i < T) {
      for (int c = lane_id() % 4; c < D; c += 4)
        gv += to_float(d_o[(base + i) * D + c]) * to_float(a.v[(base + i) * D + c]);
      rows.later[r] = saved.hi[base + i];
      rows.later_lo[r] = saved.lo[base + i];
    }
    rows.rest[r] = stick_left(rows.later[r], rows.later_lo[r]);
    rows.rem_do_v[r] = (a.remainder_to_current ? 1.f : 0.f) * quad_sum(gv);
  }
  return rows;
}

// The backward's step over key block k0 for the warp's 16 rows from row0: z holds q·k and dpv
// dO·v on entry; on return z = a, dpv = g and dz = dz (kMasked as for stick_terms).
template <bool kApprox, bool kMasked>
__device__ __forceinline__ void backward_weights_and_gradients(float (&z)[8][4], float (&dpv)[8][4],
                                                               float (&dz)[8][4], BackwardRows& rows, float scale2,
                                                               int row0, int k0, int T) {
  float sig[8][4], after[8][4], total[2];
  stick_terms<kApprox, kMasked, true>(z, dz, sig, scale2, row0, k0, T);  // dz holds the softplus terms first
  row_inclusive_sums<true>(dz, {0.f, 0.f}, after, total);  // after: the key and those to its right
  // later ← the softplus sum of the blocks right of this one.
  float right[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    add_compensated(rows.later[r], rows.later_lo[r], -total[r]);
    right[r] = rows.later[r] + rows.later_lo[r];
  }
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float av = exp2_ftz(z[n][e] - after[n][e] - right[e >> 1]);
      z[n][e] = av;
      dpv[n][e] = av * (dpv[n][e] - rows.rem_do_v[e >> 1]);
    }
  row_inclusive_sums<false>(dpv, rows.g_carry, after, total);  // after: Σ g over the key and the earlier ones
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = row0 + acc_row(e), j = k0 + acc_key(n, e);
      const bool visible = !kMasked || (j <= i && i < T);
      // g·σ(−z) − σ(z)·Σ_{j'<j} g = g − σ(z)·Σ_{j'≤j} g
      dz[n][e] = visible ? fmaf(-sig[n][e], after[n][e], dpv[n][e]) : 0.f;
    }
  rows.g_carry[0] += total[0];
  rows.g_carry[1] += total[1];
}

// The remainder 1 − Σ_j a_ij that goes to the current token (remainder_to_current): the forward adds
// (1 − Σ_j a_ij)·v_i to the thread's two rows of o (v: the slice's values, rows from row0 below T).
template <int NT, typename S>
__device__ __forceinline__ void add_remainder(float (&acc_o)[NT][4], const ForwardRows& rows, const S* v, int row0,
                                              int T) {
  constexpr int D = 8 * NT;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = row0 + acc_row(2 * r);
    const float rest = stick_left(rows.carry[r], rows.carry_lo[r]);
    if (i < T)
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        const float2 vi = load_pair(v + int64_t(i) * D + acc_col(n, 0));
        acc_o[n][2 * r] += rest * vi.x;
        acc_o[n][2 * r + 1] += rest * vi.y;
      }
  }
}
// The backward's part of it: dO's rows in acc become (1 − Σ_j a_ij)·dO_i, their rows of dv.
template <int NT>
__device__ __forceinline__ void remainder_weights(float (&acc)[NT][4], const BackwardRows& rows) {
#pragma unroll
  for (int n = 0; n < NT; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[n][e] *= rows.rest[e >> 1];
}

}  // namespace pathbench::cuda::sba
