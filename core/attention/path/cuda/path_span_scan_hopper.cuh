// PaTH's in-span scan on Hopper (sm_90a, bf16, D = 64 or 128): the algorithm and per-element step of
// path_span_scan.cuh with every product a warpgroup product over swizzled tiles (wgmma.cuh): the
// chunk crossings u − (u Wᵀ) Y of the key states and of R with u from registers, Sᵀ = K̃ Q̂ᵀ and
// dPᵀ = V dOᵀ (both operands K-major), dV += P dO (P from registers), then s·dSᵀ through shared
// memory for R += s·dSᵀ Q̂ (K-major) and dQ̂ = s·dS K̃ (M-major), and R through shared memory for
// its crossing's R Wᵀ (K-major) and dP = Rᵀ K̃ (M-major): at D = 128 neither dSᵀ nor R's fragments
// then share the registers with R, dV and R's crossing. R takes dO's tile once dV's product has read it: six [64, D] tiles and one
// [64, 64], so two blocks fit on a multiprocessor at D = 128 (one for the portable kernel) and three
// at 64.
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
  // V, K̃, Q̂, dO (then R), W, Y [64, D]; dSᵀ [64 keys, 64 queries]; the row values
  static constexpr int ds_offset = 6 * tile, rows_offset = ds_offset + wgmma::tile_bytes(kChunk, kChunk);
  static constexpr size_t bytes = rows_offset + 4 * kChunk * sizeof(float) + wgmma::kSwizzleBytes;
  static_assert(tile % wgmma::kSwizzleBytes == 0, "tiles on swizzle boundaries");
  static_assert(2 * (bytes + 1024) <= 228 * 1024 || D < 128, "two blocks fit a multiprocessor at D = 128");
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
  bf16 *sv = tile(0), *skt = tile(1), *sqh = tile(2), *sdo = tile(3), *sw = tile(4), *sy = tile(5);  // [64, D]
  bf16* sr = sdo;                                                 // [64 keys, D] R, after dV's product
  bf16* sds = reinterpret_cast<bf16*>(smem + L::ds_offset);      // [64 keys, 64 queries] s·dSᵀ
  ScanRowValues rows;
  SmemCarver carver{smem + L::rows_offset};
  rows.carve(carver);

  const int T = int(a.length), nch = int(ws.chunks), s = int(ws.span_chunks), r0 = 16 * warp_id();
  const int64_t items = ScanItems::count(a.batch_heads, nch, s);
  bf16* states = ws.states + int64_t(blockIdx.x) * s * kChunk * D;  // [s, 64, D]: K̃_b in slot b − first
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
      const int b0 = b * kChunk;
      wgmma::load_tile_async<kChunk, D>(sw, a.w + (base + b0) * D, D, T - b0);
      wgmma::load_tile_async<kChunk, D>(sy, ws.yp + (pbase + b0) * D, D, kChunk);
      cp_async_commit();
      cp_async_wait<0>();
      wgmma::fence_shared_for_tensor_cores();
      __syncthreads();
      span_hopper::cross_chunk_hopper<D>(kt, sw, sy);
      __syncthreads();
    }
    __threadfence_block();
    __syncthreads();  // every warp's states are stored before any thread copies them back

    // Walk back over the span's query chunks.
    wgmma::load_tile_async<kChunk, D>(sv, a.v + (base + c * kChunk) * D, D, T - c * kChunk);
    load_row_values(rows.gk, gate ? gate + c * kChunk : nullptr, kChunk, gate ? T - c * kChunk : 0, 0.f);
    float r[NTD][4], dv[NTD][4], col_sum[2] = {0.f, 0.f};
    load_acc(r, ws.dkh + krow * D, D);  // dK̄, turned into dK̂ in place
    load_acc(dv, ws.dvc + krow * D, D);
    for (int b = last; b > c; --b) {
      const int b0 = b * kChunk;
      wgmma::load_tile_async<kChunk, D>(skt, states + (b - first) * kChunk * D, D, kChunk);
      wgmma::load_tile_async<kChunk, D>(sqh, ws.qh + (pbase + b0) * D, D, kChunk);
      wgmma::load_tile_async<kChunk, D>(sy, ws.y + (pbase + b0) * D, D, kChunk);
      wgmma::load_tile_async<kChunk, D>(sdo, d_o + (base + b0) * D, D, T - b0);
      wgmma::load_tile_async<kChunk, D>(sw, a.w + (base + b0) * D, D, T - b0);
      cp_async_commit();
      rows.load_queries(lse, ws.delta, gate, base, b0, T);
      cp_async_wait<0>();
      wgmma::fence_shared_for_tensor_cores();
      __syncthreads();
      // Sᵀ = K̃ Q̂ᵀ and dPᵀ = V dOᵀ: the chunk's 64 keys × 64 queries, this warp's 16 keys.
      float p[8][4], ds[8][4];
      wgmma::rows_by_rows<D>(p, skt, sqh, ds, sv, sdo);
      scan_probabilities(p, ds, col_sum, rows, gate, scale2, gate2, r0, b0, T);
      wgmma::add_regs_by_tile<D>(dv, p, sdo);
#pragma unroll
      for (int n = 0; n < 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) ds[n][e] *= a.scale;
      wgmma::store_acc<kChunk>(ds, sds, r0);
      wgmma::fence_shared_for_tensor_cores();
      __syncthreads();  // s·dSᵀ is whole, and every warp's share of dV's product has read dO
      if (b < last || cross_span) {  // R holds dK̃ of chunk b+1
#pragma unroll
        for (int h = 0; h < kPanels; ++h)
          wgmma::store_acc<kChunk>(wgmma::panel(r, h), sr + h * kChunk * wgmma::kPanelCols, r0);
        wgmma::fence_shared_for_tensor_cores();
        __syncthreads();
        span_hopper::cross_chunk_hopper<D>(r, sw, sy, sr);  // R P_b = R − (R Wᵀ) X W
      }
      wgmma::fence_operands(r);
      wgmma::arrive();
      wgmma::issue_rows_by_tile<D>(r, sds, sqh);  // + s·dSᵀ Q̂_b
      wgmma::commit();
      wgmma::wait<0>();
      wgmma::fence_operands(r);
      wgmma::fence_shared_for_tensor_cores();
      __syncthreads();
      // The panel loops stay rolled: unrolled at D = 128, ptxas keeps every panel's atomic addresses
      // live at once and spills 96 bytes instead of 28.
#pragma unroll 1
      for (int h = 0; h < kPanels; ++h) {  // dQ̂_b += s·dS K̃, queries r0 …, columns 64h …
        float acc[8][4];
        wgmma::tile_by_tile(acc, sds, skt, h);
        atomic_add_acc(acc, ws.dqh + (pbase + b0 + r0) * D + h * wgmma::kPanelCols, D);
      }
      if (b < last || cross_span)
#pragma unroll 1
        for (int m = 0; m < kPanels; ++m)
#pragma unroll 1
          for (int h = 0; h < kPanels; ++h) {  // dP_b += Rᵀ K̃, rows 64m + r0 …, columns 64h …
            float acc[8][4];
            wgmma::tile_by_tile(acc, sr, skt, h, m);
            atomic_add_acc(acc, ws.dpm + ((bh * nch + b) * D + wgmma::kPanelCols * m + r0) * D + h * wgmma::kPanelCols,
                           D);
          }
      __syncthreads();
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
