// PaTH's in-span scan on Hopper (sm_90a, bf16, D = 64 or 128): the algorithm and per-element step of
// path_span_scan.cuh with every product a warpgroup product over swizzled tiles (wgmma.cuh): the
// chunk crossings u − (u Wᵀ) Y of the key states and of R with u from registers, Sᵀ = K̃ Q̂ᵀ and
// dPᵀ = V dOᵀ (both operands K-major), dV += P dO (P from registers), then s·dSᵀ through shared
// memory for R += s·dSᵀ Q̂ (K-major) and dQ̂ = s·dS K̃ (M-major), and R through shared memory for
// its crossing's R Wᵀ (K-major) and dP = Rᵀ K̃ (M-major): at D = 128 neither dSᵀ nor R's fragments
// then share the registers with R, dV and R's crossing. R takes dO's tile once dV's product has read
// it. Query chunk b − 1's tiles load into a second set during chunk b's step: eleven [64, D] tiles
// and one [64, 64] (≈ 99 KB at D = 64), so two blocks fit on a multiprocessor, as its registers
// allow.
#pragma once
#include "core/attention/cuda/wgmma.cuh"
#include "core/attention/path/cuda/path_span_hopper.cuh"
#include "core/attention/path/cuda/path_span_scan.cuh"

namespace pathbench::cuda::span_scan {

// Where the Hopper form runs: bf16 at D = 64. At D = 128 it is correct but slower than the portable
// kernel on an H100 (1.11 against 0.85 ms at 4·4096·8·128; at D = 64 0.60 against 0.63 ms at
// 4·4096·16·64; cuda-attention-notes v35), so the portable kernel runs there.
template <typename S, int D>
inline constexpr bool kScanHopperForm = wgmma::kHasHopperForm<S, D> && D == 64;

template <int D>
struct SpanScanHopperLayout {
  static constexpr int tile = wgmma::tile_bytes(kChunk, D);  // a swizzled [64, D] tile
  // V, then K̃, Q̂, dO (then R), W, Y for query chunk b and again for b − 1 [64, D]; dSᵀ [64 keys, 64
  // queries]; the query rows' values twice and the key chunk's gate
  static constexpr int ds_offset = 11 * tile, rows_offset = ds_offset + wgmma::tile_bytes(kChunk, kChunk);
  static constexpr size_t bytes = rows_offset + 7 * kChunk * sizeof(float) + wgmma::kSwizzleBytes;
  static_assert(tile % wgmma::kSwizzleBytes == 0, "tiles on swizzle boundaries");
  static_assert(2 * (bytes + 1024) <= 228 * 1024 || D > 64, "two blocks fit a multiprocessor at D = 64");
};

template <int D>
__global__ void __launch_bounds__(kThreads)
    path_span_scan_hopper_kernel(PathAttentionCudaArgs<bf16> a, PathWorkspace<bf16> ws, const bf16* d_o,
                                 const float* lse) {
#if PATHBENCH_SM90A_DEVICE
  using L = SpanScanHopperLayout<D>;
  constexpr int NTD = D / 8, kPanels = D / wgmma::kPanelCols;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = wgmma::align_to_swizzle(smem_raw);
  auto tile = [smem](int i) { return reinterpret_cast<bf16*>(smem + i * L::tile); };
  bf16* sv = tile(0);  // [64, D]
  // Query chunk b's [64, D] tiles in set p (the step's parity): K̃, Q̂, dO (then R, after dV's
  // product), W, Y.
  auto skt = [&](int p) { return tile(1 + 5 * p); };
  auto sqh = [&](int p) { return tile(2 + 5 * p); };
  auto sdo = [&](int p) { return tile(3 + 5 * p); };
  auto sw = [&](int p) { return tile(4 + 5 * p); };
  auto sy = [&](int p) { return tile(5 + 5 * p); };
  bf16* sds = reinterpret_cast<bf16*>(smem + L::ds_offset);  // [64 keys, 64 queries] s·dSᵀ
  SmemCarver carver{smem + L::rows_offset};
  ScanRowValues rows0;
  rows0.carve(carver);
  const ScanRowValues rows1 = rows0.with_own_queries(carver);
  auto rows = [&](int p) { return p ? rows1 : rows0; };

  const int T = int(a.length), nch = int(ws.chunks), s = int(ws.span_chunks), r0 = 16 * warp_id();
  const int64_t items = ScanItems::count(a.batch_heads, nch, s);
  bf16* states = ws.states + int64_t(blockIdx.x) * s * kChunk * D;  // [s, 64, D]: K̃_b in slot b − first
  const float scale2 = a.scale * kLog2e, gate2 = a.gate_scale * kLog2e;

  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int c = ScanItems::key_chunk(item, a.batch_heads, s), first = c / s * s, last = min(first + s, nch) - 1;
    const int64_t bh = item % a.batch_heads, base = bh * T, pbase = bh * ws.padded, krow = pbase + c * kChunk + r0;
    const float* gate = a.cum_log_gate ? a.cum_log_gate + base : nullptr;
    const bool cross_span = last + 1 < nch;  // dK̄ is not zero: keys are seen by later spans
    // Copies (cp.async, not committed) of query chunk b's Q̂ and dO, with its row values (plain
    // stores), and of its K̃ (stored by this block), W and Y, into set p.
    auto load_queries = [&](int p, int b) {
      const int b0 = b * kChunk;
      wgmma::load_tile_async<kChunk, D>(sqh(p), ws.qh + (pbase + b0) * D, D, kChunk);
      wgmma::load_tile_async<kChunk, D>(sdo(p), d_o + (base + b0) * D, D, T - b0);
      rows(p).load_queries(lse, ws.delta, gate, base, b0, T);
    };
    auto load_crossing = [&](int p, int b) {
      const int b0 = b * kChunk;
      wgmma::load_tile_async<kChunk, D>(skt(p), states + (b - first) * kChunk * D, D, kChunk);
      wgmma::load_tile_async<kChunk, D>(sw(p), a.w + (base + b0) * D, D, T - b0);
      wgmma::load_tile_async<kChunk, D>(sy(p), ws.y + (pbase + b0) * D, D, kChunk);
    };

    // V and the span's last query chunk's Q̂ and dO load while the keys move, each crossing's W and Yᵀ
    // side Y' a crossing ahead (crossing b through the W, Y tiles of set (b − c) mod 2).
    auto load_key_crossing = [&](int b) {
      const int b0 = b * kChunk, q = (b - c) & 1;
      wgmma::load_tile_async<kChunk, D>(sw(q), a.w + (base + b0) * D, D, T - b0);
      wgmma::load_tile_async<kChunk, D>(sy(q), ws.yp + (pbase + b0) * D, D, kChunk);
    };
    wgmma::load_tile_async<kChunk, D>(sv, a.v + (base + c * kChunk) * D, D, T - c * kChunk);
    load_queries(0, last);
    if (c + 1 < last) load_key_crossing(c + 1);
    cp_async_commit();
    load_row_values(rows0.gk, gate ? gate + c * kChunk : nullptr, kChunk, gate ? T - c * kChunk : 0, 0.f);

    // Keys moved rightwards: K̃_b = K̂_c P_{c+1}ᵀ ⋯ P_{b−1}ᵀ for b = c+1 … last, P_bᵀ = I − Wᵀ Xᵀ W.
    float kt[NTD][4];
    load_acc(kt, ws.kh + krow * D, D);
    for (int b = c + 1; b <= last; ++b) {
      store_acc(kt, states + ((b - first) * kChunk + r0) * D, D);
      if (b == last) break;
      // Crossing b's tiles are in; the other set's were read by crossing b − 1.
      wgmma::next_stage(b + 1 < last, [&] { load_key_crossing(b + 1); });
      const int q = (b - c) & 1;
      span_hopper::cross_chunk_hopper<D>(kt, sw(q), sy(q));
    }
    __threadfence_block();
    __syncthreads();  // every warp's states are stored before any thread copies them back
    load_crossing(0, last);
    cp_async_commit();

    // Walk back over the span's query chunks; chunk b − 1's tiles load into the other set during
    // chunk b's step.
    float r[NTD][4], dv[NTD][4], col_sum[2] = {0.f, 0.f};
    load_acc(r, ws.dkh + krow * D, D);  // dK̄, turned into dK̂ in place
    load_acc(dv, ws.dvc + krow * D, D);
    for (int b = last, p = 0; b > c; --b, p ^= 1) {
      const int b0 = b * kChunk;
      // Chunk b's tiles and rows are in; the other set's last readers are done.
      wgmma::next_stage(b - 1 > c, [&] {
        load_queries(p ^ 1, b - 1);
        load_crossing(p ^ 1, b - 1);
      });
      // Sᵀ = K̃ Q̂ᵀ and dPᵀ = V dOᵀ: the chunk's 64 keys × 64 queries, this warp's 16 keys.
      float pr[8][4], ds[8][4];
      wgmma::rows_by_rows<D>(pr, skt(p), sqh(p), ds, sv, sdo(p));
      scan_probabilities(pr, ds, col_sum, rows(p), gate, scale2, gate2, r0, b0, T);
      wgmma::add_regs_by_tile<D>(dv, pr, sdo(p));
#pragma unroll
      for (int n = 0; n < 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) ds[n][e] *= a.scale;
      wgmma::store_acc<kChunk>(ds, sds, r0);
      wgmma::fence_shared_for_tensor_cores();
      __syncthreads();  // s·dSᵀ is whole, and every warp's share of dV's product has read dO
      bf16* sr = sdo(p);  // [64 keys, D] R
      if (b < last || cross_span) {  // R holds dK̃ of chunk b+1
#pragma unroll
        for (int h = 0; h < kPanels; ++h)
          wgmma::store_acc<kChunk>(wgmma::panel(r, h), sr + h * kChunk * wgmma::kPanelCols, r0);
        wgmma::fence_shared_for_tensor_cores();
        __syncthreads();
        span_hopper::cross_chunk_hopper<D>(r, sw(p), sy(p), sr);  // R P_b = R − (R Wᵀ) X W
      }
      wgmma::fence_operands(r);
      wgmma::arrive();
      wgmma::issue_rows_by_tile<D>(r, sds, sqh(p));  // + s·dSᵀ Q̂_b
      wgmma::commit();
      wgmma::wait<0>();
      wgmma::fence_operands(r);
      // The panel loops stay rolled: unrolled at D = 128, ptxas keeps every panel's atomic addresses
      // live at once and spills 96 bytes instead of 28.
#pragma unroll 1
      for (int h = 0; h < kPanels; ++h) {  // dQ̂_b += s·dS K̃, queries r0 …, columns 64h …
        float acc[8][4];
        wgmma::tile_by_tile(acc, sds, skt(p), h);
        atomic_add_acc(acc, ws.dqh + (pbase + b0 + r0) * D + h * wgmma::kPanelCols, D);
      }
      if (b < last || cross_span)
#pragma unroll 1
        for (int m = 0; m < kPanels; ++m)
#pragma unroll 1
          for (int h = 0; h < kPanels; ++h) {  // dP_b += Rᵀ K̃, rows 64m + r0 …, columns 64h …
            float acc[8][4];
            wgmma::tile_by_tile(acc, sr, skt(p), h, m);
            atomic_add_acc(acc, ws.dpm + ((bh * nch + b) * D + wgmma::kPanelCols * m + r0) * D + h * wgmma::kPanelCols,
                           D);
          }
    }
    store_acc(r, ws.dkh + krow * D, D);
    store_acc(dv, ws.dvc + krow * D, D);
    if (gate) add_gate_gradient(ws.dcc + krow, col_sum, a.gate_scale);
    __syncthreads();
  }
#else
  __trap();  // launched only where hopper_kernels() holds
#endif
}

}  // namespace pathbench::cuda::span_scan
