// Stick-breaking attention on Hopper (sm_90a, bf16, D = 64 or 128): the algorithm of sba_kernels.cu —
// the forward one block per 64 query rows, scanning key blocks from the diagonal leftwards until the
// weights vanish; the backward one block of two warpgroups per 128 query rows (two query blocks), in
// one pass from the leftmost key block either needs rightwards, dq in registers and dk, dv added by
// atomics once per 128 queries — with every product a warpgroup product (wgmma.cuh) over swizzled
// tiles: z = Q Kᵀ and dO Vᵀ (both operands K-major), o += a V and dq += dz K (a, dz from registers;
// V, K N-major), dK = dzᵀ Q and dV = aᵀ dO (dz, a through shared memory, M-major; Q, dO N-major).
// The per-element steps are sba_steps.cuh's, shared with the portable kernels.
#pragma once
#include "core/attention/cuda/tiles.cuh"
#include "core/attention/cuda/wgmma.cuh"
#include "core/attention/sba/cuda/sba_kernels.h"
#include "core/attention/sba/cuda/sba_steps.cuh"

namespace pathbench::cuda::sba {

constexpr int kPairThreads = 2 * kThreads;  // the backward's two warpgroups

template <int D>
struct SbaHopperLayout {
  static constexpr int tile = wgmma::tile_bytes(kChunk, D);              // a swizzled [64, D] tile
  static constexpr int square = wgmma::tile_bytes(kChunk, kChunk);       // a swizzled [64, 64] tile
  static constexpr size_t forward_bytes = wgmma::ForwardTiles<D>::bytes + wgmma::kSwizzleBytes;  // Q + 2 × (K, V)
  // the backward's 128 query rows: 2 × (Q, dO), 2 × (K, V), then two sets (by key-block parity) of
  // 2 × (a, dz) [64 queries, 64 keys]
  static constexpr size_t backward_bytes = 8 * tile + 8 * square + wgmma::kSwizzleBytes;
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

// The backward's block: 128 query rows, two 64-row query blocks of slice blockIdx.y (pairs counted
// from the last, longest rows first), warpgroup wg taking query block 2·pair + wg, warp w of it rows
// 16w … 16w+15. The second query block is absent where the slice has an odd number of them.
struct QueryBlockPair {
  int T, blocks, pair, wg, qb, q0, row0, last;
  int64_t base;       // the slice's first row in [BH, T, ·] tensors
  bool rows_exist;    // this warpgroup's query block lies within the slice
  bool masked_rows;   // its rows reach past T
  __device__ explicit QueryBlockPair(int64_t length)
      : T(int(length)),
        blocks((T + kChunk - 1) / kChunk),
        pair((blocks + 1) / 2 - 1 - int(blockIdx.x)),
        wg(warp_id() / 4),
        qb(2 * pair + wg),
        q0(qb * kChunk),
        row0(q0 + 16 * (warp_id() % 4)),
        last(min(2 * pair + 1, blocks - 1)),
        base(int64_t(blockIdx.y) * T),
        rows_exist(qb < blocks),
        masked_rows(q0 + kChunk > T) {}
};

// One pass over key blocks from the pair's first (the leftmost of its two query blocks' first) to
// its last: each warpgroup recomputes a and dz of its own 64 rows (a warpgroup whose block the key
// block lies left of its first or right of its diagonal stores zeros instead) with dq in registers;
// after one barrier warpgroup 0 forms dK = dzᵀ·Q and warpgroup 1 dV = aᵀ·dO over all 128 queries and
// adds them with atomics into zeroed fp32 dk_acc, dv_acc. Against a block per query block this loads
// each K, V tile once per 128 queries and adds each key block's dk, dv once per 128 queries. The last
// 64 columns of that product are not waited for: they run on with the next key block's Q Kᵀ and dO Vᵀ
// and their atomics follow that wait, and a, dz alternate between two sets of tiles by key-block
// parity so that the next block's stores need not wait for them either.
template <int D>
__global__ void __launch_bounds__(kPairThreads, 1)
    sba_backward_hopper_kernel(StickBreakingCudaArgs<bf16> a, SavedSums saved, const bf16* d_o, bf16* dq,
                               float* dk_acc, float* dv_acc) {
#if PATHBENCH_SM90A_DEVICE
  using L = SbaHopperLayout<D>;
  constexpr int NTD = D / 8, kPanels = D / wgmma::kPanelCols;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = wgmma::align_to_swizzle(smem_raw);
  // [2][64, D] each: the pair's two query blocks' Q and dO rows, and two stages of K and V
  auto sq = [smem](int half) { return reinterpret_cast<bf16*>(smem + half * L::tile); };
  auto sdo = [smem](int half) { return reinterpret_cast<bf16*>(smem + (2 + half) * L::tile); };
  auto sk = [smem](int st) { return reinterpret_cast<bf16*>(smem + (4 + st) * L::tile); };
  auto sv = [smem](int st) { return reinterpret_cast<bf16*>(smem + (6 + st) * L::tile); };
  // [2 sets][2][64 queries, 64 keys] each: the two query blocks' weights a and their gradients dz,
  // key block it in set it & 1 (its dK, dV products may still read the set of the block before)
  auto sa = [smem](int half, int set) {
    return reinterpret_cast<bf16*>(smem + 8 * L::tile + (4 * set + half) * L::square);
  };
  auto sdz = [smem](int half, int set) {
    return reinterpret_cast<bf16*>(smem + 8 * L::tile + (4 * set + 2 + half) * L::square);
  };

  const QueryBlockPair blk(a.length);
  const int T = blk.T, qb = blk.qb, row0 = blk.row0, wg = blk.wg, w = warp_id() % 4;
  const int64_t base = blk.base;
  const bf16* k = a.k + base * D;
  const bf16* v = a.v + base * D;
  const float scale2 = a.scale * kLog2e;

  auto issue = [&](int it) {
    const int st = it & 1, k0 = it * kChunk;
    wgmma::load_tile_async<kChunk, D, kPairThreads>(sk(st), k + int64_t(k0) * D, D, T - k0, KeyOrder{});
    wgmma::load_tile_async<kChunk, D, kPairThreads>(sv(st), v + int64_t(k0) * D, D, T - k0, KeyOrder{});
  };
#pragma unroll
  for (int half = 0; half < 2; ++half) {  // an absent query block's tiles are zeros
    const int r0 = (2 * blk.pair + half) * kChunk;
    const int64_t at = base + min(r0, T - 1);
    wgmma::load_tile_async<kChunk, D, kPairThreads>(sq(half), a.q + at * D, D, T - r0);
    wgmma::load_tile_async<kChunk, D, kPairThreads>(sdo(half), d_o + at * D, D, T - r0);
  }
  const int pair_first = 2 * blk.pair + 1 < blk.blocks
                             ? min(saved.first_block_of(2 * blk.pair), saved.first_block_of(2 * blk.pair + 1))
                             : saved.first_block_of(2 * blk.pair);
  // the blocks before a query block's first hold no weight of its rows; an absent block has none
  const int own_first = blk.rows_exist ? saved.first_block_of(qb) : blk.last + 1;
  issue(pair_first);
  cp_async_commit();

  BackwardRows rows = backward_rows<D>(a, saved, d_o, base, row0);
  float acc_dq[NTD][4];
  zero(acc_dq);
  const bool key_grad = wg == 0;  // warpgroup 0 forms dK = dzᵀ·Q, warpgroup 1 dV = aᵀ·dO
  // Rows 16w … 16w+15 of key block kb (in KeyOrder) times the keys' gradient scale, added to panel h.
  auto add_key_rows = [&](const float (&acc)[8][4], int kb, int h) {
    float* out = (key_grad ? dk_acc : dv_acc) + (base + kb * kChunk) * D + h * wgmma::kPanelCols;
    atomic_add_acc(acc, out, D, T - kb * kChunk, key_grad ? a.scale : 1.f, WarpKeyOrder{w});
  };
  Frag16<bf16> fdz[4];   // dz as the dq product's A operand: read until that product is waited for
  float last_panel[8][4];  // the last panel of a key block's dK or dV, in flight into the next block
  int in_flight = -1;      // the key block whose last panel is in flight (−1: none)
  auto add_in_flight = [&] {  // after a wait that covers its product
    if (in_flight < 0) return;
    wgmma::fence_operands(last_panel);
    add_key_rows(last_panel, in_flight, kPanels - 1);
    in_flight = -1;
  };
  for (int it = pair_first; it <= blk.last; ++it) {
    wgmma::wait<1>();  // the block before's dq product is done (its last dK or dV panel may run on):
    wgmma::fence_operands(fdz);  // its K stage, refilled below, and fdz are free
    wgmma::next_stage(it < blk.last, [&] { issue(it + 1); });
    const int st = it & 1, k0 = it * kChunk;
    const bf16* tk = sk(st);
    const bool active = it >= own_first && it <= qb;  // uniform across the warpgroup
    if (active) {
      float z[8][4], dpv[8][4], dz[8][4];
      wgmma::rows_by_rows<D>(z, sq(wg), tk, dpv, sdo(wg), sv(st));  // waited for with the panel in flight
      add_in_flight();
      // z ← a, dpv ← g, dz ← the gradient of z; kMasked: the diagonal block, or rows past T.
      if (it == qb || blk.masked_rows)
        backward_weights_and_gradients<true, true>(z, dpv, dz, rows, scale2, row0, k0, T);
      else
        backward_weights_and_gradients<true, false>(z, dpv, dz, rows, scale2, row0, k0, T);
      // dq += dz K (dz from registers).
      wgmma::to_fragments(fdz, dz);
      wgmma::fence_operands(acc_dq);
      wgmma::arrive();
      wgmma::issue_regs_by_tile<D>(acc_dq, fdz, tk);
      wgmma::commit();
      // a and dz to shared memory (the product above reads registers and K only).
      wgmma::store_acc<kChunk>(z, sa(wg, st), 16 * w);
      wgmma::store_acc<kChunk>(dz, sdz(wg, st), 16 * w);
    } else {
      wgmma::wait<0>();
      add_in_flight();
      float none[8][4];
      zero(none);
      wgmma::store_acc<kChunk>(none, sa(wg, st), 16 * w);
      wgmma::store_acc<kChunk>(none, sdz(wg, st), 16 * w);
    }
    wgmma::fence_shared_for_tensor_cores();
    __syncthreads();
    // Rows 16w … 16w+15 of the block's keys in KeyOrder, 64 columns at a time, over both query
    // blocks; the last panel is left running into the next key block's Q Kᵀ and dO Vᵀ.
    auto issue_key_panel = [&](float (&acc)[8][4], int h) {
      wgmma::arrive();
#pragma unroll
      for (int half = 0; half < 2; ++half)
        wgmma::issue_tile_by_tile(acc, key_grad ? sdz(half, st) : sa(half, st), key_grad ? sq(half) : sdo(half), h,
                                  0, half > 0);
      wgmma::commit();
    };
#pragma unroll
    for (int h = 0; h + 1 < kPanels; ++h) {
      float acc[8][4];
      issue_key_panel(acc, h);
      wgmma::wait<0>();
      wgmma::fence_operands(acc);
      add_key_rows(acc, it, h);
    }
    wgmma::fence_operands(last_panel);
    issue_key_panel(last_panel, kPanels - 1);
    in_flight = it;
  }
  wgmma::wait<0>();
  add_in_flight();
  wgmma::fence_operands(acc_dq);
  store_acc(acc_dq, dq + (base + row0) * D, D, T - row0, a.scale);
  if (a.remainder_to_current) {
#pragma unroll
    for (int h = 0; h < kPanels; ++h) {
      float acc[8][4];
      wgmma::load_acc<kChunk>(acc, sdo(wg), 16 * w, h * wgmma::kPanelCols);
      remainder_weights(acc, rows);
      atomic_add_acc(acc, dv_acc + (base + row0) * D + h * wgmma::kPanelCols, D, T - row0);
    }
  }
#else
  __trap();  // launched only where hopper_kernels() holds
#endif
}

}  // namespace pathbench::cuda::sba
