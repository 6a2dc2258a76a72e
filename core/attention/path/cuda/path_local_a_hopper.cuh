// PaTH's per-chunk backward, part a, on Hopper (sm_90a, bf16, D = 64 or 128): path_local_a.cuh's
// kernel and per-element step with every product a warpgroup product over swizzled tiles
// (wgmma.cuh). dQ̂ enters dQW's product from registers and dQW enters dq's from registers; every other
// operand is read from shared memory, K-major or MN-major as it lies (dP as a [D, D] tile, read
// either way). The fp32 workspace tiles dK̂, dP and dQ̂ are converted into swizzled bf16 tiles.
#pragma once
#include "core/attention/cuda/wgmma.cuh"
#include "core/attention/path/cuda/path_local_a.cuh"

namespace pathbench::cuda::local_a {

// Where the Hopper form runs: bf16 at D = 64 (0.35 against 0.39 ms at 4·4096·16·64 on an H100). At
// D = 128 it timed the same as the portable kernel (0.51 ms; cuda-attention-notes v35), which runs there.
template <typename S, int D>
inline constexpr bool kLocalAHopperForm = wgmma::kHasHopperForm<S, D> && D == 64;

// Byte offsets of the swizzled tiles from the aligned start of shared memory. Tiles whose uses end
// early give their place to later ones: Q (after dq), then dQ̂ (after dw) take K's; dP [D, D] takes
// V's (and dO's at D = 128) and dK̂ takes dO's (its own tile at D = 128) once dV's product has read
// dO; dQW takes P's after dV; tril(Q Wᵀ), formed here from Q and W, takes Y's after dw. D = 64: 64 KB
// of tiles (three blocks per multiprocessor); D = 128: 120 KB.
template <int D>
struct LocalAHopperLayout {
  static constexpr int tile = wgmma::tile_bytes(kChunk, D), square = wgmma::tile_bytes(kChunk, kChunk);
  static constexpr int k = 0, w = k + tile, v = w + tile, dout = v + tile;
  static constexpr int dkh = wgmma::tile_bytes(D, D) <= tile ? dout : dout + tile;
  static constexpr int y = dkh + tile, mm = y + tile, p = mm + square, ds = p + square, rows = ds + square;
  static constexpr size_t bytes = rows + 4 * kChunk * sizeof(float) + wgmma::kSwizzleBytes;
  static_assert(tile % wgmma::kSwizzleBytes == 0 && square % wgmma::kSwizzleBytes == 0, "tiles on swizzle boundaries");
  static_assert(dkh >= dout + wgmma::tile_bytes(D, D) - tile, "dP over V (and dO) leaves dK̂ its own place");
  static_assert(bytes <= 227 * 1024, "one block fits a multiprocessor");
};

template <int D>
__global__ void __launch_bounds__(kThreads)
    path_local_a_hopper_kernel(PathAttentionCudaArgs<bf16> a, PathWorkspace<bf16> ws, const bf16* d_o,
                               const float* lse, bf16* dq, bf16* dv, float* d_gate) {
#if PATHBENCH_SM90A_DEVICE
  using L = LocalAHopperLayout<D>;
  constexpr int NTD = D / 8, kPanels = D / wgmma::kPanelCols, kCols = wgmma::kPanelCols;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = wgmma::align_to_swizzle(smem_raw);
  auto at = [smem](int offset) { return reinterpret_cast<bf16*>(smem + offset); };
  bf16 *sk = at(L::k), *sw = at(L::w), *sv = at(L::v), *sdo = at(L::dout), *sdkh = at(L::dkh);  // [64, D]
  bf16 *sy = at(L::y), *smm = at(L::mm), *sp = at(L::p), *sds = at(L::ds);  // Y [64, D]; M, P, dS' [64, 64]
  bf16 *sq = sk, *sdqh = sk, *sdp = sv, *sqw = sy, *sdqw = sp;             // the later tenants
  LocalRowValues rows;
  SmemCarver carver{smem + L::rows};
  rows.carve(carver);

  const int T = int(a.length), nch = int(ws.chunks), b = int(blockIdx.x), b0 = b * kChunk, valid = T - b0;
  const int r0 = 16 * warp_id();
  const int64_t bh = blockIdx.y, base = bh * T, prow = bh * ws.padded + b0;
  const int64_t cc = (bh * nch + b) * kChunk * kChunk;
  const float* gate = a.cum_log_gate ? a.cum_log_gate + base : nullptr;

  wgmma::load_tile_async<kChunk, D>(sk, a.k + (base + b0) * D, D, valid);
  wgmma::load_tile_async<kChunk, D>(sw, a.w + (base + b0) * D, D, valid);
  wgmma::load_tile_async<kChunk, D>(sv, a.v + (base + b0) * D, D, valid);
  wgmma::load_tile_async<kChunk, D>(sdo, d_o + (base + b0) * D, D, valid);
  wgmma::load_tile_async<kChunk, D>(sy, ws.y + prow * D, D, kChunk);
  wgmma::load_tile_async<kChunk, kChunk>(smm, ws.mm + cc, kChunk, kChunk);
  cp_async_commit();
  rows.load(lse, ws.delta, gate, base, b0, valid);
  cp_async_wait<0>();
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();

  // The chunk's own logits: P and dS' = s·P ∘ (dP − δ) for rows r0 … r0+15.
  float p[8][4], ds[8][4];
  load_own_logits(p, ws.sd + cc);
  wgmma::rows_by_rows<D>(ds, sdo, sv);
  local_probabilities(p, ds, rows, a.scale, gate != nullptr, a.gate_scale, r0, valid);
  wgmma::store_acc<kChunk>(p, sp, r0);
  wgmma::store_acc<kChunk>(ds, sds, r0);
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();
#pragma unroll 1
  for (int h = 0; h < kPanels; ++h) {  // dV = dV(other chunks) + Pᵀ dO, keys r0 …, columns 64h …
    float acc[8][4];
    load_acc(acc, ws.dvc + (prow + r0) * D + h * kCols, D);
    wgmma::tile_by_tile(acc, sp, sdo, h, 0, true);
    store_acc(acc, dv + (base + b0 + r0) * D + h * kCols, D, valid - r0);
  }
  if (d_gate) rows.store_gate_gradient(d_gate + base + b0, ws.dcc + prow, a.gate_scale, valid);
  __syncthreads();  // V, dO and P are no longer read: dP, dK̂ and dQW take their places
  wgmma::store_float_tile<kChunk, D>(sdkh, ws.dkh + prow * D);
  wgmma::store_float_tile<D, D>(sdp, ws.dpm + (bh * nch + b) * D * D);
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();

  {  // dQW = −tril(dQ̂ Yᵀ + dS' Mᵀ); dq = dQ̂ + dS' K + dQW W (rows r0 …)
    float dqr[NTD][4], dqw[8][4];
    load_acc(dqr, ws.dqh + (prow + r0) * D, D);
    Frag16<bf16> fdq[D / 16];
    wgmma::to_fragments(fdq, dqr);
    wgmma::arrive();
    wgmma::issue_regs_by_rows<D>(dqw, fdq, sy);
    wgmma::issue_rows_by_rows<kChunk>(dqw, sds, smm, true);
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(dqw);
    wgmma::fence_operands(fdq);
    mask_acc(dqw, r0, [](int i, int j) { return j <= i; });
    negate(dqw);
    wgmma::store_acc<kChunk>(dqw, sdqw, r0);
    Frag16<bf16> fdqw[4];
    wgmma::to_fragments(fdqw, dqw);
    wgmma::fence_operands(dqr);
    wgmma::arrive();
    wgmma::issue_rows_by_tile<D>(dqr, sds, sk);
    wgmma::issue_regs_by_tile<D>(dqr, fdqw, sw);
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(dqr);
    wgmma::fence_operands(fdqw);
    store_acc(dqr, dq + (base + b0 + r0) * D, D, valid - r0);
  }
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();  // K is no longer read (Q takes its place), and every warp's dQW rows are in place
  wgmma::load_tile_async<kChunk, D>(sq, a.q + (base + b0) * D, D, valid);
  cp_async_commit();
  cp_async_wait<0>();
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();
#pragma unroll 1
  for (int h = 0; h < kPanels; ++h) {  // dk (part) = dK̂ + dS'ᵀ Q, keys r0 …, columns 64h …
    float acc[8][4];
    load_acc(acc, ws.dkh + (prow + r0) * D + h * kCols, D);
    wgmma::tile_by_tile(acc, sds, sq, h, 0, true);
    store_acc(acc, ws.dk_part + (prow + r0) * D + h * kCols, D);
  }
  {  // dw (part) = −(M dK̂ + Y dPᵀ) + dQWᵀ Q, rows r0 …
    float acc[NTD][4];
    wgmma::arrive();
    wgmma::issue_rows_by_tile<D>(acc, smm, sdkh, false);
    wgmma::issue_rows_by_square_t<D>(acc, sy, sdp);
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(acc);
    negate(acc);
#pragma unroll
    for (int h = 0; h < kPanels; ++h) wgmma::tile_by_tile(wgmma::panel(acc, h), sdqw, sq, h, 0, true);
    store_acc(acc, ws.dw_part + (prow + r0) * D, D);
  }
  __syncthreads();  // Y and dQW are no longer read: tril(Q Wᵀ) takes Y's place
  {
    float qw[8][4];
    wgmma::rows_by_rows<D>(qw, sq, sw);
    mask_acc(qw, r0, [](int i, int j) { return j <= i; });
    wgmma::store_acc<kChunk>(qw, sqw, r0);
  }
  __syncthreads();  // Q is no longer read: dQ̂ takes its place
  wgmma::store_float_tile<kChunk, D>(sdqh, ws.dqh + prow * D);
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();
  {  // dM = −(QWᵀ dS' + W dK̂ᵀ), rows r0 …
    float acc[8][4];
    wgmma::arrive();
    wgmma::issue_tile_by_tile(acc, sqw, sds, 0);
    wgmma::issue_rows_by_rows<D>(acc, sw, sdkh, true);
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(acc);
    negate(acc);
    store_acc(acc, ws.dm + cc + r0 * kChunk, kChunk);
  }
  {  // dY = −(QWᵀ dQ̂ + W dP), rows r0 …
    float acc[NTD][4];
    wgmma::arrive();
#pragma unroll
    for (int h = 0; h < kPanels; ++h) wgmma::issue_tile_by_tile(wgmma::panel(acc, h), sqw, sdqh, h);
    wgmma::issue_rows_by_square<D>(acc, sw, sdp);
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(acc);
    negate(acc);
    store_acc(acc, ws.dy + (prow + r0) * D, D);
  }
#else
  __trap();  // launched only where hopper_kernels() holds
#endif
}

}  // namespace pathbench::cuda::local_a
