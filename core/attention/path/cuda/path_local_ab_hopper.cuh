// PaTH's per-chunk backward on Hopper (sm_90a, bf16, D = 64): local a (path_local_a.cuh) and local b
// (path_local_b_hopper.cuh's steps) in one kernel, one block a chunk, every product a warpgroup
// product over swizzled tiles (wgmma.cuh). dM and dY stay on chip as tiles, dk's partial sum is
// formed where local b adds to it, and K, W are read once: about 64 KB a chunk fewer than the two
// kernels of the portable path move through global memory (dw's partial sum still passes through
// the workspace). In local a, dQ̂ enters dQW's product from registers and dQW enters dq's from
// registers; every other operand is read from shared memory, K-major or MN-major as it lies (dP as
// a [D, D] tile, read either way). The fp32 workspace tiles dK̂, dP and dQ̂ are converted into
// swizzled bf16 tiles.
#pragma once
#include "core/attention/cuda/wgmma.cuh"
#include "core/attention/path/cuda/path_local_a.cuh"
#include "core/attention/path/cuda/path_local_b_hopper.cuh"

namespace pathbench::cuda::local_ab {

using namespace tiles;

// Where the fused kernel runs: bf16 at D = 64 (its [64, 64] places hold the [64, D] tiles; at D = 128
// local a's portable kernel and local b's Hopper kernel run).
template <typename S, int D>
inline constexpr bool kLocalABHopperForm = wgmma::kHasHopperForm<S, D> && D == 64;

// Byte offsets of thirteen swizzled [64, 64] places from the aligned start of shared memory, then
// the row values and β: 104 KB of tiles, two blocks a multiprocessor. The loads fill nine (K, W, V,
// dO, Y, M, Q, A⁻¹_hi, A⁻¹_lo) and P, dS' two; later tenants take the places of tiles whose uses have
// ended. Local a: dP takes V's, dK̂ dO's and dQW P's once dV's product has read them; tril(Q Wᵀ) the
// first spare; dQ̂ Y's once dw's partial sum has read Y; then dM takes dQW's and dY M's. Local b: X,
// X_lo, SL, dSL take dP's, dK̂'s, dQ̂'s and tril(Q Wᵀ)'s, dX_hi SL's and dX_lo the second spare (dG
// then dM's); dS' and Q stay for dk's last products.
struct LocalABHopperLayout {
  static constexpr int tile = wgmma::tile_bytes(kChunk, kChunk);
  static constexpr int k = 0, w = tile, v = 2 * tile, dout = 3 * tile, y = 4 * tile, mm = 5 * tile, p = 6 * tile;
  static constexpr int ds = 7 * tile, q = 8 * tile, ainv = 9 * tile, ainvlo = 10 * tile, spare = 11 * tile;
  static constexpr int spare2 = 12 * tile, rows = 13 * tile, beta = rows + 4 * kChunk * sizeof(float);
  static constexpr size_t bytes = beta + kChunk * sizeof(float) + wgmma::kSwizzleBytes;
  static_assert(tile % wgmma::kSwizzleBytes == 0, "tiles on swizzle boundaries");
  static_assert(2 * (bytes + 1024) <= 228 * 1024, "two blocks fit a multiprocessor");
};

template <int D>
__global__ void __launch_bounds__(kThreads)
    path_local_ab_hopper_kernel(PathAttentionCudaArgs<bf16> a, PathWorkspace<bf16> ws, const bf16* d_o,
                                const float* lse, bf16* dq, bf16* dv, float* d_gate, bf16* dk, bf16* dw,
                                float* dbeta) {
#if PATHBENCH_SM90A_DEVICE
  static_assert(D == kChunk, "[64, D] tiles take [64, 64] places");
  using L = LocalABHopperLayout;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = wgmma::align_to_swizzle(smem_raw);
  auto at = [smem](int offset) { return reinterpret_cast<bf16*>(smem + offset); };
  bf16 *sk = at(L::k), *sw = at(L::w), *sv = at(L::v), *sdo = at(L::dout), *sy = at(L::y), *sq = at(L::q);  // [64, D]
  bf16 *smm = at(L::mm), *sp = at(L::p), *sds = at(L::ds), *sainv = at(L::ainv), *sainvlo = at(L::ainvlo);  // [64, 64]
  bf16 *sspare = at(L::spare), *sspare2 = at(L::spare2);
  bf16 *sdp = sv, *sdkh = sdo, *sdqw = sp, *sqw = sspare, *sdqh = sy, *sdm = sp, *sdy = smm;  // local a's tenants
  float* beta = reinterpret_cast<float*>(smem + L::beta);
  local_a::LocalRowValues rows;
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
  wgmma::load_tile_async<kChunk, D>(sq, a.q + (base + b0) * D, D, valid);  // first read after dq
  wgmma::load_tile_async<kChunk, kChunk>(sainv, ws.ainv + cc, kChunk, kChunk);
  wgmma::load_tile_async<kChunk, kChunk>(sainvlo, ws.ainvlo + cc, kChunk, kChunk);
  cp_async_commit();
  rows.load(lse, ws.delta, gate, base, b0, valid);
  load_row_values(beta, a.beta + base + b0, kChunk, valid, 0.f);
  cp_async_wait<1>();
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();

  // The chunk's own logits: P and dS' = s·P ∘ (dP − δ) for rows r0 … r0+15.
  float p[8][4], ds[8][4];
  load_own_logits(p, ws.sd + cc);
  wgmma::rows_by_rows<D>(ds, sdo, sv);
  local_a::local_probabilities(p, ds, rows, a.scale, gate != nullptr, a.gate_scale, r0, valid);
  wgmma::store_acc<kChunk>(p, sp, r0);
  wgmma::store_acc<kChunk>(ds, sds, r0);
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();
  {  // dV = dV(other chunks) + Pᵀ dO, keys r0 …
    float acc[8][4];
    load_acc(acc, ws.dvc + (prow + r0) * D, D);
    wgmma::tile_by_tile(acc, sp, sdo, 0, 0, true);
    store_acc(acc, dv + (base + b0 + r0) * D, D, valid - r0);
  }
  if (d_gate) rows.store_gate_gradient(d_gate + base + b0, ws.dcc + prow, a.gate_scale, valid);
  __syncthreads();  // V, dO and P are no longer read: dP, dK̂ and dQW take their places
  wgmma::store_float_tile<kChunk, D>(sdkh, ws.dkh + prow * D);
  wgmma::store_float_tile<D, D>(sdp, ws.dpm + (bh * nch + b) * D * D);
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();

  {  // dQW = −tril(dQ̂ Yᵀ + dS' Mᵀ); dq = dQ̂ + dS' K + dQW W (rows r0 …)
    float dqr[8][4], dqw[8][4];
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
  cp_async_wait<0>();
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();  // Q and A⁻¹ are in place, and every warp's dQW rows
  // dw's partial sum for local b, rows r0 …: −(M dK̂ + Y dPᵀ) + dQWᵀ Q, through the workspace (in
  // registers it would spill). dk's (dK̂ + dS'ᵀ Q) is formed in local b, where dS' and Q still lie.
  {
    float dw_part[8][4];
    wgmma::arrive();
    wgmma::issue_rows_by_tile<D>(dw_part, smm, sdkh, false);
    wgmma::issue_rows_by_square_t<D>(dw_part, sy, sdp);
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(dw_part);
    negate(dw_part);
    wgmma::tile_by_tile(dw_part, sdqw, sq, 0, 0, true);
    store_acc(dw_part, ws.dw_part + (prow + r0) * D, D);
  }
  {  // tril(Q Wᵀ) into the spare place
    float qw[8][4];
    wgmma::rows_by_rows<D>(qw, sq, sw);
    mask_acc(qw, r0, [](int i, int j) { return j <= i; });
    wgmma::store_acc<kChunk>(qw, sqw, r0);
  }
  __syncthreads();  // Y is no longer read: dQ̂ takes its place
  wgmma::store_float_tile<kChunk, D>(sdqh, ws.dqh + prow * D);
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();
  {  // dM = −(QWᵀ dS' + W dK̂ᵀ), rows r0 …, over dQW (M and dQW were last read before the barrier)
    float acc[8][4];
    wgmma::arrive();
    wgmma::issue_tile_by_tile(acc, sqw, sds, 0);
    wgmma::issue_rows_by_rows<D>(acc, sw, sdkh, true);
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(acc);
    negate(acc);
    wgmma::store_acc<kChunk>(acc, sdm, r0);
  }
  {  // dY = −(QWᵀ dQ̂ + W dP), rows r0 …, over M
    float acc[8][4];
    wgmma::arrive();
    wgmma::issue_tile_by_tile(acc, sqw, sdqh, 0);
    wgmma::issue_rows_by_square<D>(acc, sw, sdp);
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(acc);
    negate(acc);
    wgmma::store_acc<kChunk>(acc, sdy, r0);
  }
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();  // dM and dY are whole; dP, dK̂, dQ̂ and tril(Q Wᵀ) are no longer read (dS' and Q are, by dk)

  const local_b::LocalBHopperTiles t{sw, sk, sdy, sainv, sainvlo, sdm, sdp, sdkh, sdqh, sqw, sdqh, sspare2, beta};
  local_b::local_b_hopper_steps<D>(
      t, valid, dk + (base + b0) * D, dw + (base + b0) * D, dbeta + base + b0,
      [&](int, float (&acc)[8][4]) {  // dK̂ + dS'ᵀ Q
        load_acc(acc, ws.dkh + (prow + r0) * D, D);
        wgmma::tile_by_tile(acc, sds, sq, 0, 0, true);
      },
      [&](float (&acc)[8][4]) { load_acc(acc, ws.dw_part + (prow + r0) * D, D); });
#else
  __trap();  // launched only where hopper_kernels() holds
#endif
}

}  // namespace pathbench::cuda::local_ab
