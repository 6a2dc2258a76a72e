// Stick-breaking attention on Hopper (sm_90a, bf16, D = 64 or 128): the algorithm of sba_kernels.cu —
// one block per 64 query rows, the forward scanning key blocks from the diagonal leftwards until the
// weights vanish, the backward in one pass from the forward's leftmost key block rightwards with dq
// in registers and dk, dv added by atomics — with
// every product a warpgroup product (wgmma.cuh) over swizzled tiles: z = Q Kᵀ and dO Vᵀ (both
// operands K-major), o += a V and dq += dz K (a, dz from registers; V, K N-major), dK = dzᵀ Q and
// dV = aᵀ dO (dz, a through shared memory, M-major; Q, dO N-major). The per-element steps are
// sba_steps.cuh's, shared with the portable kernels.
#pragma once
#include "core/attention/cuda/tiles.cuh"
#include "core/attention/cuda/wgmma.cuh"
#include "core/attention/sba/cuda/sba_kernels.h"
#include "core/attention/sba/cuda/sba_steps.cuh"

namespace pathbench::cuda::sba {

template <int D>
struct SbaHopperLayout {
  static constexpr int tile = wgmma::tile_bytes(kChunk, D);              // a swizzled [64, D] tile
  static constexpr int square = wgmma::tile_bytes(kChunk, kChunk);       // a swizzled [64, 64] tile
  static constexpr size_t forward_bytes = wgmma::ForwardTiles<D>::bytes + wgmma::kSwizzleBytes;  // Q + 2 × (K, V)
  // Q, dO, 2 × (K, V), then the weights a and dz [64 queries, 64 keys]
  static constexpr size_t backward_bytes = 6 * tile + 2 * square + wgmma::kSwizzleBytes;
};

template <int D>
__global__ void __launch_bounds__(kThreads, 2)
    sba_forward_hopper_kernel(StickBreakingCudaArgs<bf16> a, bf16* o, SavedSums saved) {
#if PATHBENCH_SM90A_DEVICE
  constexpr int NTD = D / 8;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const wgmma::ForwardTiles<D> tile{wgmma::align_to_swizzle(smem_raw)};

  const QueryBlock blk(a.length);
  const int T = blk.T, qb = blk.qb, q0 = blk.q0, row0 = blk.row0;
  const int64_t base = blk.base;
  const bf16* k = a.k + base * D;
  const bf16* v = a.v + base * D;
  const float scale2 = a.scale * kLog2e;

  auto issue = [&](int it) {
    const int st = it & 1, k0 = (qb - it) * kChunk;
    wgmma::load_tile_async<kChunk, D>(tile.k(st), k + int64_t(k0) * D, D, T - k0, KeyOrder{});
    wgmma::load_tile_async<kChunk, D>(tile.v(st), v + int64_t(k0) * D, D, T - k0, KeyOrder{});
  };
  wgmma::load_tile_async<kChunk, D>(tile.q(), a.q + (base + q0) * D, D, T - q0);
  issue(0);
  cp_async_commit();

  ForwardRows rows;
  float acc_o[NTD][4];
  zero(acc_o);
  int first = 0;  // the leftmost key block scanned
  for (int it = 0; it <= qb; ++it) {
    wgmma::next_stage(it < qb, [&] { issue(it + 1); });
    const int st = it & 1, k0 = (qb - it) * kChunk;
    float z[8][4];
    wgmma::rows_by_rows<D>(z, tile.q(), tile.k(st));
    forward_weights<true>(z, rows, it == 0 || blk.masked_rows, scale2, row0, k0, T);
    wgmma::add_regs_by_tile<D>(acc_o, z, tile.v(st));
    first = qb - it;
    if (__syncthreads_and(rows_vanished(rows, row0, T))) break;
  }
  save_forward_sums(saved, rows, blk, first);
  if (a.remainder_to_current) add_remainder(acc_o, rows, v, row0, T);
  store_acc(acc_o, o + (base + row0) * D, D, T - row0);
#else
  __trap();  // launched only where hopper_kernels() holds
#endif
}

template <int D>
__global__ void __launch_bounds__(kThreads, 2)
    sba_backward_hopper_kernel(StickBreakingCudaArgs<bf16> a, SavedSums saved, const bf16* d_o, bf16* dq,
                               float* dk_acc, float* dv_acc) {
#if PATHBENCH_SM90A_DEVICE
  using L = SbaHopperLayout<D>;
  constexpr int NTD = D / 8, kPanels = D / wgmma::kPanelCols;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = wgmma::align_to_swizzle(smem_raw);
  bf16* sq = reinterpret_cast<bf16*>(smem);                                                   // [64, D]
  bf16* sdo = reinterpret_cast<bf16*>(smem + L::tile);                                        // [64, D]
  auto sk = [smem](int st) { return reinterpret_cast<bf16*>(smem + (2 + st) * L::tile); };  // [2][64, D]
  auto sv = [smem](int st) { return reinterpret_cast<bf16*>(smem + (4 + st) * L::tile); };  // [2][64, D]
  bf16* sa = reinterpret_cast<bf16*>(smem + 6 * L::tile);                 // [64 queries, 64 keys] a
  bf16* sdz = reinterpret_cast<bf16*>(smem + 6 * L::tile + L::square);   // [64 queries, 64 keys] dz

  const QueryBlock blk(a.length);
  const int T = blk.T, qb = blk.qb, q0 = blk.q0, row0 = blk.row0, w = warp_id();
  const int64_t base = blk.base;
  const bf16* k = a.k + base * D;
  const bf16* v = a.v + base * D;
  const float scale2 = a.scale * kLog2e;

  auto issue = [&](int it) {
    const int st = it & 1, k0 = it * kChunk;
    wgmma::load_tile_async<kChunk, D>(sk(st), k + int64_t(k0) * D, D, T - k0, KeyOrder{});
    wgmma::load_tile_async<kChunk, D>(sv(st), v + int64_t(k0) * D, D, T - k0, KeyOrder{});
  };
  wgmma::load_tile_async<kChunk, D>(sq, a.q + (base + q0) * D, D, T - q0);
  wgmma::load_tile_async<kChunk, D>(sdo, d_o + (base + q0) * D, D, T - q0);
  const int first = saved.first_block_of(qb);  // the blocks before it hold no weight
  issue(first);
  cp_async_commit();

  BackwardRows rows = backward_rows<D>(a, saved, d_o, base, row0);
  float acc_dq[NTD][4];
  zero(acc_dq);
  for (int it = first; it <= qb; ++it) {
    wgmma::next_stage(it < qb, [&] { issue(it + 1); });
    const int st = it & 1, k0 = it * kChunk;
    const bf16* tk = sk(st);
    float z[8][4], dpv[8][4], dz[8][4];
    wgmma::rows_by_rows<D>(z, sq, tk, dpv, sdo, sv(st));
    // z ← a, dpv ← g, dz ← the gradient of z; kMasked: the diagonal block, or rows past T.
    if (it == qb || blk.masked_rows)
      backward_weights_and_gradients<true, true>(z, dpv, dz, rows, scale2, row0, k0, T);
    else
      backward_weights_and_gradients<true, false>(z, dpv, dz, rows, scale2, row0, k0, T);
    // dq += dz K (dz from registers).
    Frag16<bf16> fdz[4];
    wgmma::to_fragments(fdz, dz);
    wgmma::fence_operands(acc_dq);
    wgmma::arrive();
    wgmma::issue_regs_by_tile<D>(acc_dq, fdz, tk);
    wgmma::commit();
    // a and dz to shared memory (the product above reads registers and K only).
    wgmma::store_acc<kChunk>(z, sa, 16 * w);
    wgmma::store_acc<kChunk>(dz, sdz, 16 * w);
    wgmma::fence_shared_for_tensor_cores();
    __syncthreads();
    // dK and dV rows 16w … 16w+15 of the block's keys in KeyOrder: dzᵀ·Q and aᵀ·dO, 64 columns at a time.
#pragma unroll
    for (int h = 0; h < 2 * kPanels; ++h) {
      const bool key_grad = h < kPanels;
      const int panel = key_grad ? h : h - kPanels;
      float acc[8][4];
      wgmma::tile_by_tile(acc, key_grad ? sdz : sa, key_grad ? sq : sdo, panel);
      if (h == 0) wgmma::fence_operands(fdz);  // the dq product is done too
      float* out = (key_grad ? dk_acc : dv_acc) + (base + k0) * D + panel * wgmma::kPanelCols;
      atomic_add_acc(acc, out, D, T - k0, key_grad ? a.scale : 1.f, WarpKeyOrder{w});
    }
  }
  wgmma::fence_operands(acc_dq);
  store_acc(acc_dq, dq + (base + row0) * D, D, T - row0, a.scale);
  if (a.remainder_to_current) {
#pragma unroll
    for (int h = 0; h < kPanels; ++h) {
      float acc[8][4];
      wgmma::load_acc<kChunk>(acc, sdo, 16 * w, h * wgmma::kPanelCols);
      remainder_weights(acc, rows);
      atomic_add_acc(acc, dv_acc + (base + row0) * D + h * wgmma::kPanelCols, D, T - row0);
    }
  }
#else
  __trap();  // launched only where hopper_kernels() holds
#endif
}

}  // namespace pathbench::cuda::sba
