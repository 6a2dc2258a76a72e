// PaTH's per-chunk backward, part a, CUDA (algorithm in path_kernels.h; launched by
// path_backward.cu): per chunk, the chunk's own logits (diagonal block) and the first layer of the UT
// backward (dq and dv final; dM, dY and partial dk, dw to the workspace). Here: the per-row values and
// the per-element step both forms share, and the portable (mma.sync) kernel;
// path_local_ab_hopper.cuh holds the Hopper form, which runs local b in the same kernel.
#pragma once
#include "core/attention/path/cuda/path_workspace.cuh"

namespace pathbench::cuda::local_a {

using namespace tiles;

// The chunk's per-query values (lse in log₂ units, Δ, the cumulative log gate) and the column sums
// of dS, each [64] in shared memory.
struct LocalRowValues {
  float *lse = nullptr, *delta = nullptr, *gate = nullptr, *col_sum = nullptr;
  __host__ __device__ constexpr void carve(SmemCarver& c) {
    lse = c.take<float>(kChunk);
    delta = c.take<float>(kChunk);
    gate = c.take<float>(kChunk);
    col_sum = c.take<float>(kChunk);
  }
  // Fills them for the tokens b0 … b0+63 (rows at or past `valid` get zeros; the whole block; a
  // barrier must follow).
  __device__ void load(const float* lse_rows, const float* delta_rows, const float* gate_rows, int64_t base, int b0,
                       int valid) const {
    for (int i = int(threadIdx.x); i < kChunk; i += kThreads) {
      const bool in = i < valid;
      lse[i] = in ? lse_rows[base + b0 + i] * kLog2e : 0.f;
      delta[i] = in ? delta_rows[base + b0 + i] : 0.f;
      gate[i] = in && gate_rows ? gate_rows[b0 + i] : 0.f;
      col_sum[i] = 0.f;
    }
  }
  // d(cum log gate) of the chunk's tokens: the other chunks' part (dcc) − g·Σ_i dS_ij.
  __device__ void store_gate_gradient(float* d_gate, const float* dcc, float gate_scale, int valid) const {
    for (int j = int(threadIdx.x); j < valid && j < kChunk; j += kThreads) d_gate[j] = dcc[j] - gate_scale * col_sum[j];
  }
};

// For this warp's 16 queries (rows r0 …) × the chunk's 64 keys: p holds the chunk's own logits (the
// prep's, unscaled) and ds holds dP = dO Vᵀ on entry; on exit p = P (causal, zero past `valid`) and
// ds = dS' = s·P ∘ (dP − Δ), and rows.col_sum gains Σ_i dS_ij (unscaled; shared-memory atomics).
// With `gated`, the FoX bias g·(c_i − c_j) joins the logits.
__device__ __forceinline__ void local_probabilities(float (&p)[8][4], float (&ds)[8][4], const LocalRowValues& rows,
                                                    float scale, bool gated, float gate_scale, int r0, int valid) {
  const float scale2 = scale * kLog2e;
#pragma unroll
  for (int n = 0; n < 8; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int il = r0 + acc_row(e), jl = acc_col(n, e);
      float x = p[n][e] * scale2 - rows.lse[il];
      if (gated) x += gate_scale * kLog2e * (rows.gate[il] - rows.gate[jl]);
      const float pv = jl <= il && il < valid ? exp2_ftz(x) : 0.f;
      p[n][e] = pv;
      ds[n][e] = pv * (ds[n][e] - rows.delta[il]);
    }
#pragma unroll
    for (int e = 0; e < 2; ++e) {  // column sums of dS over the warp's rows
      float s = ds[n][e] + ds[n][e + 2];
      s += __shfl_xor_sync(kFullMask, s, 4);
      s += __shfl_xor_sync(kFullMask, s, 8);
      s += __shfl_xor_sync(kFullMask, s, 16);
      if (lane_id() < 4) atomicAdd(&rows.col_sum[acc_col(n, e)], s);
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) ds[n][e] *= scale;
  }
}

// ---- the portable kernel ------------------------------------------------------------------------

// tril(Q Wᵀ) is formed here from Q and W (one product), in shared memory for fp32 as well.
// Compact (bf16 at D = 64): eight tiles instead of eleven, 73 KB instead of 100, so three blocks fit on
// a multiprocessor instead of two. Tiles whose uses end early take later tiles' places: dK̂ takes
// dO's, dP takes V's (both once P and dS' are formed), Q takes K's (after dq), dQ̂ takes dQW's and
// QWᵀ takes Y's (after dw); Q and dQ̂ then load, and QWᵀ is formed, when their places free up instead
// of at the start.
template <typename S, int D>
constexpr bool kCompactLocalA = std::is_same_v<S, bf16> && D == 64;

template <typename S, int D>
struct LocalASmem {
  static constexpr int ld = stride_of<S>(D), lds = stride_of<S>(kChunk);
  S *q, *k, *w, *v, *dout, *y, *qw, *mm, *p, *ds, *dpm;
  S *dqh, *dkh;  // dQ̂, dK̂ (bf16)
  LocalRowValues rows;
  size_t bytes;
  __host__ __device__ explicit LocalASmem(unsigned char* base) {
    SmemCarver c{base};
    k = c.take<S>(tile_elems<S>(kChunk, D));
    w = c.take<S>(tile_elems<S>(kChunk, D));
    v = c.take<S>(tile_elems<S>(kChunk, D));
    dout = c.take<S>(tile_elems<S>(kChunk, D));
    y = c.take<S>(staged_bytes<S>(kChunk, D) / sizeof(S));
    mm = c.take<S>(staged_bytes<S>(kChunk, kChunk) / sizeof(S));
    p = c.take<S>(tile_elems<S>(kChunk, kChunk));  // P, later dQW
    ds = c.take<S>(tile_elems<S>(kChunk, kChunk));
    dkh = dout;
    if constexpr (kCompactLocalA<S, D>) {
      static_assert(D == kChunk, "the compact layout swaps tiles of equal size");
      dpm = v;
      q = k;
      dqh = p;
      qw = y;
    } else {
      q = c.take<S>(tile_elems<S>(kChunk, D));
      qw = c.take<S>(tile_elems<S>(kChunk, kChunk));
      dpm = c.take<S>(staged_bytes<S>(D, D) / sizeof(S));
      dqh = v;
    }
    rows.carve(c);
    bytes = c.offset;
  }
};

template <typename S, int D>
__global__ void __launch_bounds__(kThreads)
    path_local_a_kernel(PathAttentionCudaArgs<S> a, PathWorkspace<S> ws, const S* d_o, const float* lse, S* dq,
                        S* dv, float* d_gate) {
  constexpr int NTD = D / 8, KTD = D / 16;
  constexpr bool kCompact = kCompactLocalA<S, D>;
  using Sm = LocalASmem<S, D>;
  constexpr int ld = Sm::ld, lds = Sm::lds;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const Sm sm(smem_raw);
  const int T = int(a.length), nch = int(ws.chunks), b = int(blockIdx.x), b0 = b * kChunk, valid = T - b0;
  const int r0 = 16 * warp_id();
  const int64_t bh = blockIdx.y, base = bh * T, prow = bh * ws.padded + b0;
  const int64_t cc = (bh * nch + b) * kChunk * kChunk;
  const float* gate = a.cum_log_gate ? a.cum_log_gate + base : nullptr;
  auto load_q = [&] { load_tile_async<S, kChunk, D>(sm.q, a.q + (base + b0) * D, D, valid); };
  auto form_qw = [&] {  // tril(Q Wᵀ), this warp's rows (Q and W in place; a barrier must follow)
    float acc[8][4];
    zero(acc);
    mma_ss<BLayout::NK, false, 8, KTD>(acc, sm.q + r0 * ld, ld, sm.w, ld);
    mask_acc(acc, r0, [](int i, int j) { return j <= i; });
    store_acc(acc, sm.qw + r0 * lds, lds);
  };

  load_tile_async<S, kChunk, D>(sm.k, a.k + (base + b0) * D, D, valid);
  load_tile_async<S, kChunk, D>(sm.w, a.w + (base + b0) * D, D, valid);
  load_tile_async<S, kChunk, D>(sm.v, a.v + (base + b0) * D, D, valid);
  load_tile_async<S, kChunk, D>(sm.dout, d_o + (base + b0) * D, D, valid);
  const TileRef<S> y = workspace_tile<S, kChunk, D>(sm.y, ws.y + prow * D);
  const TileRef<S> mm = workspace_tile<S, kChunk, kChunk>(sm.mm, ws.mm + cc);
  const TileRef<S> qw{sm.qw, lds};
  if constexpr (!kCompact) load_q();
  cp_async_commit();
  sm.rows.load(lse, ws.delta, gate, base, b0, valid);
  cp_async_wait<0>();
  __syncthreads();
  if constexpr (!kCompact) form_qw();  // read after the barriers below

  // The chunk's own logits: P and dS' = s·P ∘ (dP − δ) for rows r0 … r0+15.
  float p[8][4], ds[8][4];
  load_own_logits(p, ws.sd + cc);
  zero(ds);
  mma_ss<BLayout::NK, false, 8, KTD>(ds, sm.dout + r0 * ld, ld, sm.v, ld);
  local_probabilities(p, ds, sm.rows, a.scale, gate != nullptr, a.gate_scale, r0, valid);
  store_acc(p, sm.p + r0 * lds, lds);
  store_acc(ds, sm.ds + r0 * lds, lds);
  __syncthreads();
  {  // dV = dV(other chunks) + Pᵀ dO, keys r0 …
    float acc[NTD][4];
    load_acc(acc, ws.dvc + (prow + r0) * D, D);
    mma_ss<BLayout::KN, true, NTD, 4>(acc, sm.p + r0, lds, sm.dout, ld);
    store_acc(acc, dv + (base + b0 + r0) * D, D, valid - r0);
  }
  if (d_gate) sm.rows.store_gate_gradient(d_gate + base + b0, ws.dcc + prow, a.gate_scale, valid);
  __syncthreads();  // V, dO and P are no longer read
  const TileRef<S> dkh = float_tile<S, kChunk, D>(sm.dkh, ws.dkh + prow * D);
  const TileRef<S> dpm = float_tile<S, D, D>(sm.dpm, ws.dpm + (bh * nch + b) * D * D);
  TileRef<S> dqh{};
  if constexpr (!kCompact) dqh = float_tile<S, kChunk, D>(sm.dqh, ws.dqh + prow * D);
  __syncthreads();

  // dQW = −tril(dQ̂ Yᵀ + dS' Mᵀ); dq = dQ̂ + dS' K + dQW W (rows r0 …).
  {
    float dqr[NTD][4], dqw[8][4];
    load_acc(dqr, ws.dqh + (prow + r0) * D, D);
    zero(dqw);
    mma_acc<BLayout::NK>(dqw, dqr, y.p, y.ld);
    mma_ss<BLayout::NK, false, 8, 4>(dqw, sm.ds + r0 * lds, lds, mm.p, mm.ld);
    mask_acc(dqw, r0, [](int i, int j) { return j <= i; });
    negate(dqw);
    store_acc(dqw, sm.p + r0 * lds, lds);
    mma_ss<BLayout::KN, false, NTD, 4>(dqr, sm.ds + r0 * lds, lds, sm.k, ld);
    mma_acc<BLayout::KN>(dqr, dqw, sm.w, ld);
    store_acc(dqr, dq + (base + b0 + r0) * D, D, valid - r0);
  }
  auto key_gradient = [&] {  // dk (part) = dK̂ + dS'ᵀ Q
    float acc[NTD][4];
    load_acc(acc, ws.dkh + (prow + r0) * D, D);
    mma_ss<BLayout::KN, true, NTD, 4>(acc, sm.ds + r0, lds, sm.q, ld);
    store_acc(acc, ws.dk_part + (prow + r0) * D, D);
  };
  auto w_gradient = [&] {  // dw (part) = −(M dK̂ + Y dPᵀ) + dQWᵀ Q
    float acc[NTD][4];
    zero(acc);
    mma_ss<BLayout::KN, false, NTD, 4>(acc, mm.p + r0 * mm.ld, mm.ld, dkh.p, dkh.ld);
    mma_ss<BLayout::NK, false, NTD, KTD>(acc, y.p + r0 * y.ld, y.ld, dpm.p, dpm.ld);
    negate(acc);
    mma_ss<BLayout::KN, true, NTD, 4>(acc, sm.p + r0, lds, sm.q, ld);
    store_acc(acc, ws.dw_part + (prow + r0) * D, D);
  };
  auto factor_gradients = [&] {
    {  // dM = −(QWᵀ dS' + W dK̂ᵀ)
      float acc[8][4];
      zero(acc);
      mma_ss<BLayout::KN, true, 8, 4>(acc, qw.p + r0, qw.ld, sm.ds, lds);
      mma_ss<BLayout::NK, false, 8, KTD>(acc, sm.w + r0 * ld, ld, dkh.p, dkh.ld);
      negate(acc);
      store_acc(acc, ws.dm + cc + r0 * kChunk, kChunk);
    }
    {  // dY = −(QWᵀ dQ̂ + W dP)
      float acc[NTD][4];
      zero(acc);
      mma_ss<BLayout::KN, true, NTD, 4>(acc, qw.p + r0, qw.ld, dqh.p, dqh.ld);
      mma_ss<BLayout::KN, false, NTD, KTD>(acc, sm.w + r0 * ld, ld, dpm.p, dpm.ld);
      negate(acc);
      store_acc(acc, ws.dy + (prow + r0) * D, D);
    }
  };
  if constexpr (kCompact) {
    __syncthreads();  // K is no longer read: Q takes its place
    load_q();
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();  // Q and every warp's dQW rows are in place
    key_gradient();
    w_gradient();
    __syncthreads();  // Y and dQW are no longer read: QWᵀ and dQ̂ take their places
    form_qw();
    dqh = float_tile<S, kChunk, D, kThreads, 2>(sm.dqh, ws.dqh + prow * D);  // 2 float4 in flight: 130 registers, not 193
    __syncthreads();
    factor_gradients();
  } else {
    factor_gradients();
    key_gradient();
    __syncthreads();  // every warp's dQW rows
    w_gradient();
  }
}

}  // namespace pathbench::cuda::local_a
