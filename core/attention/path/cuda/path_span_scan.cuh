// PaTH's in-span scan, CUDA (algorithm in path_kernels.h; launched by path_backward.cu): the pairs of
// a query chunk and an earlier key chunk of the same span. A persistent grid; each block takes key
// chunks c (all but a span's last: ScanItems), moves the chunk's keys rightwards through the rest of
// its span storing each state K̃ in its own slot of the workspace, then walks back from the span's
// last query chunk b to c+1: R = dK̃ starts from dK̄ (the cross-span pass), dV and R stay in
// registers, dQ̂_b and dP_b (the gradient of b's chunk product) are accumulated with fp32 atomics.
// Here: the item order and per-element step both forms share, and the portable (mma.sync) kernel;
// path_span_scan_hopper.cuh holds the Hopper form.
#pragma once
#include "core/attention/path/cuda/path_workspace.cuh"

namespace pathbench::cuda::span_scan {

using namespace tiles;

// The scan's items, chunk-major (item i: the n-th key chunk, n = i / BH, of slice i % BH): every key
// chunk but its span's last, whose keys meet no later query chunk of the span, so that its dK̂ is the
// dK̄ the key-major pass stored in place and its dV that pass's.
struct ScanItems {
  __host__ __device__ static int64_t count(int64_t batch_heads, int64_t chunks, int64_t span_chunks) {
    return batch_heads * (chunks - (chunks + span_chunks - 1) / span_chunks);
  }
  // Item i's key chunk: the n-th that is not its span's last (s − 1 of them a span; count() is 0
  // when s = 1).
  __device__ static int key_chunk(int64_t item, int64_t batch_heads, int s) {
    const int n = int(item / batch_heads);
    return n / (s - 1) * s + n % (s - 1);
  }
};

// The per-query values of query chunk b (lse in log₂ units, Δ, the gate) and the gate of the key
// chunk, each [64] in shared memory; gq and gk are zeros without a gate.
struct ScanRowValues {
  float *lse = nullptr, *delta = nullptr, *gq = nullptr, *gk = nullptr;
  __host__ __device__ constexpr void carve(SmemCarver& c) {
    lse = c.take<float>(kChunk);
    delta = c.take<float>(kChunk);
    gq = c.take<float>(kChunk);
    gk = c.take<float>(kChunk);
  }
  // Fills lse, Δ and gq for the queries b0 … b0+63 (the whole block; a barrier must follow).
  __device__ void load_queries(const float* lse_rows, const float* delta_rows, const float* gate, int64_t base,
                               int b0, int T) const {
    for (int i = int(threadIdx.x); i < kChunk; i += kThreads) {
      const bool in = b0 + i < T;
      lse[i] = in ? lse_rows[base + b0 + i] * kLog2e : 0.f;
      delta[i] = in ? delta_rows[base + b0 + i] : 0.f;
      gq[i] = in && gate ? gate[b0 + i] : 0.f;
    }
  }
};

// For this warp's 16 keys (rows r0 …) × the chunk's 64 queries b0 …: p holds Sᵀ = K̃ Q̂ᵀ and ds holds
// dPᵀ = V dOᵀ on entry; on exit p = P (zero past T) and ds = dSᵀ = P ⊙ (dPᵀ − Δ), and col_sum gains
// each of the thread's two key rows' Σ dS (the gate's gradient).
__device__ __forceinline__ void scan_probabilities(float (&p)[8][4], float (&ds)[8][4], float (&col_sum)[2],
                                                   const ScanRowValues& rows, bool gate, float scale2, float gate2,
                                                   int r0, int b0, int T) {
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int il = acc_col(n, e), jl = r0 + acc_row(e);
      float x = p[n][e] * scale2 - rows.lse[il];
      if (gate) x += gate2 * (rows.gq[il] - rows.gk[jl]);
      const float pv = b0 + il < T ? exp2_ftz(x) : 0.f;
      p[n][e] = pv;
      ds[n][e] = pv * (ds[n][e] - rows.delta[il]);
      col_sum[e >> 1] += ds[n][e];
    }
}

// The key chunk's d(cum log gate): the cross-span part plus −g·Σ dS of the in-span pairs.
__device__ __forceinline__ void add_gate_gradient(float* dcc, const float (&col_sum)[2], float gate_scale) {
  const float sum0 = quad_sum(col_sum[0]), sum1 = quad_sum(col_sum[1]);
  if (lane_id() % 4 == 0) {
    dcc[lane_id() / 4] -= gate_scale * sum0;
    dcc[lane_id() / 4 + 8] -= gate_scale * sum1;
  }
}

// ---- the portable kernel ------------------------------------------------------------------------

template <typename S, int D>
struct SpanScanSmem {
  static constexpr int ld = stride_of<S>(D), lds = stride_of<S>(kChunk);
  S *v, *kt, *qh, *dout, *w, *y, *r, *ds;  // v, kt, r, ds: the key chunk; the rest: one query chunk
  ScanRowValues rows;
  size_t bytes;
  __host__ __device__ constexpr explicit SpanScanSmem(unsigned char* base) {
    SmemCarver c{base};
    v = c.take<S>(tile_elems<S>(kChunk, D));
    kt = c.take<S>(staged_bytes<S>(kChunk, D) / sizeof(S));
    qh = c.take<S>(staged_bytes<S>(kChunk, D) / sizeof(S));
    dout = c.take<S>(tile_elems<S>(kChunk, D));
    w = c.take<S>(tile_elems<S>(kChunk, D));
    y = c.take<S>(staged_bytes<S>(kChunk, D) / sizeof(S));
    r = c.take<S>(tile_elems<S>(kChunk, D));
    ds = c.take<S>(tile_elems<S>(kChunk, kChunk));
    rows.carve(c);
    bytes = c.offset;
  }
};

template <typename S, int D>
__global__ void __launch_bounds__(kThreads)
    path_span_scan_kernel(PathAttentionCudaArgs<S> a, PathWorkspace<S> ws, const S* d_o, const float* lse) {
  constexpr int NTD = D / 8, KTD = D / 16;
  using Sm = SpanScanSmem<S, D>;
  constexpr int ld = Sm::ld, lds = Sm::lds;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const Sm sm(smem_raw);
  const int T = int(a.length), nch = int(ws.chunks), s = int(ws.span_chunks), wp = warp_id(), r0 = 16 * wp;
  const int64_t items = ScanItems::count(a.batch_heads, nch, s);
  S* states = ws.states + int64_t(blockIdx.x) * s * kChunk * D;  // [s, 64, D]: K̃_b in slot b − first
  const float scale2 = a.scale * kLog2e, gate2 = a.gate_scale * kLog2e;

  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int c = ScanItems::key_chunk(item, a.batch_heads, s), first = c / s * s, last = min(first + s, nch) - 1;
    const int64_t bh = item % a.batch_heads, base = bh * T, pbase = bh * ws.padded, krow = pbase + c * kChunk + r0;
    const float* gate = a.cum_log_gate ? a.cum_log_gate + base : nullptr;
    const bool cross_span = last + 1 < nch;  // dK̄ is not zero: keys are seen by later spans

    // Keys moved rightwards: K̃_b = K̂_c P_{c+1}ᵀ ⋯ P_{b−1}ᵀ for b = c+1 … last, P_bᵀ = I − Wᵀ Xᵀ W.
    float kt[NTD][4];
    load_acc(kt, ws.kh + krow * D, D);
    for (int b = c + 1; b <= last; ++b) {
      store_acc(kt, states + ((b - first) * kChunk + r0) * D, D);
      if (b == last) break;
      load_tile_async<S, kChunk, D>(sm.w, a.w + (base + b * kChunk) * D, D, T - b * kChunk);
      const TileRef<S> yp = workspace_tile<S, kChunk, D>(sm.y, ws.yp + (pbase + b * kChunk) * D);
      cp_async_commit();
      cp_async_wait<0>();
      __syncthreads();
      cross_chunk(kt, sm.w, ld, yp.p, yp.ld);
      __syncthreads();
    }
    __threadfence_block();
    __syncthreads();  // every warp's states are stored before any thread copies them back

    // Walk back over the span's query chunks.
    load_tile_async<S, kChunk, D>(sm.v, a.v + (base + c * kChunk) * D, D, T - c * kChunk);
    load_row_values(sm.rows.gk, gate ? gate + c * kChunk : nullptr, kChunk, gate ? T - c * kChunk : 0, 0.f);
    float r[NTD][4], dv[NTD][4], col_sum[2] = {0.f, 0.f};
    load_acc(r, ws.dkh + krow * D, D);  // dK̄, turned into dK̂ in place
    load_acc(dv, ws.dvc + krow * D, D);
    for (int b = last; b > c; --b) {
      const int b0 = b * kChunk;
      const TileRef<S> ktile = workspace_tile<S, kChunk, D>(sm.kt, states + (b - first) * kChunk * D);
      const TileRef<S> qh = workspace_tile<S, kChunk, D>(sm.qh, ws.qh + (pbase + b0) * D);
      const TileRef<S> y = workspace_tile<S, kChunk, D>(sm.y, ws.y + (pbase + b0) * D);
      load_tile_async<S, kChunk, D>(sm.dout, d_o + (base + b0) * D, D, T - b0);
      load_tile_async<S, kChunk, D>(sm.w, a.w + (base + b0) * D, D, T - b0);
      cp_async_commit();
      sm.rows.load_queries(lse, ws.delta, gate, base, b0, T);
      cp_async_wait<0>();
      __syncthreads();
      // Sᵀ = K̃ Q̂ᵀ and dPᵀ = V dOᵀ: this warp's 16 keys × the chunk's 64 queries.
      float p[8][4], ds[8][4];
      zero(p);
      zero(ds);
      mma_ss<BLayout::NK, false, 8, KTD>(p, ktile.p + r0 * ktile.ld, ktile.ld, qh.p, qh.ld);
      mma_ss<BLayout::NK, false, 8, KTD>(ds, sm.v + r0 * ld, ld, sm.dout, ld);
      scan_probabilities(p, ds, col_sum, sm.rows, gate, scale2, gate2, r0, b0, T);
      mma_acc<BLayout::KN>(dv, p, sm.dout, ld);
      const bool later = b < last || cross_span;  // R holds dK̃ of chunk b+1
      if (later) {
        store_acc(r, sm.r + r0 * ld, ld);
        cross_chunk(r, sm.w, ld, y.p, y.ld);  // R P_b = R − (R Wᵀ) X W
      }
      mma_acc<BLayout::KN>(r, ds, qh.p, qh.ld, a.scale);  // + s·dSᵀ Q̂_b
      store_acc(ds, sm.ds + r0 * lds, lds);
      __syncthreads();
      {  // dQ̂_b += s·dS K̃ for queries r0 …
        float acc[NTD][4];
        zero(acc);
        mma_ss<BLayout::KN, true, NTD, 4>(acc, sm.ds + r0, lds, ktile.p, ktile.ld);
        atomic_add_acc(acc, ws.dqh + (pbase + b0 + r0) * D, D, 16, a.scale);
      }
      if (later)  // dP_b += Rᵀ K̃, rows 16·tile … of the D × D matrix
        for (int tile = wp; tile < D / 16; tile += kWarps) {
          float acc[NTD][4];
          zero(acc);
          mma_ss<BLayout::KN, true, NTD, 4>(acc, sm.r + 16 * tile, ld, ktile.p, ktile.ld);
          atomic_add_acc(acc, ws.dpm + ((bh * nch + b) * D + 16 * tile) * D, D);
        }
      __syncthreads();
    }
    store_acc(r, ws.dkh + krow * D, D);
    store_acc(dv, ws.dvc + krow * D, D);
    if (gate) add_gate_gradient(ws.dcc + krow, col_sum, a.gate_scale);
    __syncthreads();
  }
}

}  // namespace pathbench::cuda::span_scan
