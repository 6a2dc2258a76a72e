// The key-major softmax-attention backward on Hopper (sm_90a, bf16, D = 64 or 128): the algorithm of
// key_major_backward.cuh — one block per 64 keys streaming the query blocks that see them, P and dS
// recomputed, dK and dV in registers, s·dS·K added into the fp32 dQ accumulator with atomics — with
// every product a warpgroup product (wgmma.cuh) that reads its shared operands directly, once per
// block instead of once per warp: Sᵀ = K Qᵀ and dPᵀ = V dOᵀ (both operands K-major), dV += Pᵀ dO and
// dK += dSᵀ Q (Pᵀ, dSᵀ from registers, keys × queries; dO, Q N-major), dQ = dS K (the dSᵀ tile
// through shared memory, read M-major; K N-major). Tiles are swizzled 64-column panels; D = 128
// runs each 64-column half as its own product.
#pragma once
#include "core/attention/cuda/key_major_tile.cuh"
#include "core/attention/cuda/tiles.cuh"
#include "core/attention/cuda/wgmma.cuh"

namespace pathbench::cuda::detail {

// Key block blockIdx.x of slice blockIdx.y: the query blocks it meets and where its slices start.
// (The portable kernel keeps these as locals: in this struct its compact form took 204 registers
// instead of 168.)
template <typename S, typename O, int D, bool kCausal>
struct KeyMajorBlock {
  int T, nblocks, kb, k0, first;  // first: the first query block that sees these keys
  int64_t base;                   // the slice's first row in [BH, T, ·] tensors
  const S* q;                     // the queries this key block meets (PaTH: span j's moved copies)
  float* dq;                      // the same rows of the dq accumulator
  const S* d_o;
  const float* gate;  // the slice's cumulative log gates, or null
  __device__ explicit KeyMajorBlock(const KeyMajorBackwardArgs<S, O>& a)
      : T(int(a.length)),
        nblocks((T + tiles::kChunk - 1) / tiles::kChunk),
        kb(int(blockIdx.x)),
        k0(kb * tiles::kChunk),
        first(kCausal ? kb : (kb / a.span_blocks + 1) * a.span_blocks),
        base(int64_t(blockIdx.y) * T) {
    const int64_t qoff = int64_t(blockIdx.y) * a.q_slice + (kCausal ? 0 : (kb / a.span_blocks) * a.q_span);
    q = a.q + qoff * D;
    dq = a.dq + qoff * D;
    d_o = a.d_o + base * D;
    gate = a.gate ? a.gate + base : nullptr;
  }
  // Does query block qb hold pairs that do not count (key after query, or rows past T)?
  __device__ bool masked(int qb) const {
    return qb * tiles::kChunk + tiles::kChunk > T || (kCausal ? qb == kb : k0 + tiles::kChunk > T);
  }
};

// Starts copying the per-row values of the 64 queries from q0 (rows past T get zeros).
template <typename S, typename O, int D, bool kCausal>
__device__ __forceinline__ void load_query_rows_async(const QueryRows& rows, const KeyMajorBackwardArgs<S, O>& a,
                                                      const KeyMajorBlock<S, O, D, kCausal>& blk, int q0) {
  using namespace tiles;
  load_row_values_async(rows.lse, a.lse + blk.base + q0, kChunk, blk.T - q0);
  load_row_values_async(rows.delta, a.delta + blk.base + q0, kChunk, blk.T - q0);
  if (blk.gate) load_row_values_async(rows.gate, blk.gate + q0, kChunk, blk.T - q0);
}

// The key block's dK, dV rows of this warp, from its accumulators: every output
// row of the slice is written (rows past T, when out_slice pads them, get zeros).
template <typename S, typename O, int D, bool kCausal, int NT>
__device__ __forceinline__ void store_key_gradients(const KeyMajorBackwardArgs<S, O>& a,
                                                    const KeyMajorBlock<S, O, D, kCausal>& blk,
                                                    const float (&acc_dk)[NT][4], const float (&acc_dv)[NT][4]) {
  using namespace tiles;
  const int row0 = blk.k0 + 16 * warp_id(), valid = int(a.out_slice) - row0;
  const int64_t out = int64_t(blockIdx.y) * a.out_slice + row0;
  store_acc(acc_dk, a.dk + out * D, D, valid, a.scale);
  store_acc(acc_dv, a.dv + out * D, D, valid);
}
template <typename S, typename O, int D, bool kCausal>
__device__ __forceinline__ void store_gate_gradients(const KeyMajorBackwardArgs<S, O>& a,
                                                     const KeyMajorBlock<S, O, D, kCausal>& blk,
                                                     const float (&col_sum)[2]) {
  using namespace tiles;
  if (!a.d_gate) return;
  const int row0 = blk.k0 + 16 * warp_id(), valid = int(a.out_slice) - row0;
  const int64_t out = int64_t(blockIdx.y) * a.out_slice + row0;
  const float dg[2] = {-a.gate_scale * quad_sum(col_sum[0]), -a.gate_scale * quad_sum(col_sum[1])};
  store_row_pair(a.d_gate + out, dg, valid);
}

template <int D>
struct KeyMajorHopperLayout {
  static constexpr int tile = wgmma::tile_bytes(tiles::kChunk, D);  // a swizzled [64, D] bf16 tile
  static constexpr int ds_tile = wgmma::tile_bytes(tiles::kChunk, tiles::kChunk);
  // K, V, 2 stages × (Q, dO), the dSᵀ tile (all multiples of 1,024 bytes), then 64 key gates and
  // 2 stages × (lse, δ, query gates), plus room to align the start to the swizzle's period.
  static constexpr size_t bytes = 6 * tile + ds_tile + 7 * tiles::kChunk * sizeof(float) + wgmma::kSwizzleBytes;
};

// kCausal as for key_major_backward_kernel. Blocks per multiprocessor that registers allow: three at
// D = 64 (60 KB of shared memory each), two at D = 128.
template <typename O, int D, bool kCausal>
__global__ void __launch_bounds__(tiles::kThreads, D == 64 ? 3 : 2)
    key_major_backward_hopper_kernel(KeyMajorBackwardArgs<bf16, O> a) {
#if PATHBENCH_SM90A_DEVICE
  using namespace tiles;
  using L = KeyMajorHopperLayout<D>;
  constexpr int kPanels = D / wgmma::kPanelCols, NTD = D / 8;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = wgmma::align_to_swizzle(smem_raw);
  bf16* sk = reinterpret_cast<bf16*>(smem);              // [64 keys, D]
  bf16* sv = reinterpret_cast<bf16*>(smem + L::tile);    // [64 keys, D]
  bf16* sq = reinterpret_cast<bf16*>(smem + 2 * L::tile);   // [2][64 queries, D]
  bf16* sdo = reinterpret_cast<bf16*>(smem + 4 * L::tile);  // [2][64 queries, D]
  bf16* sds = reinterpret_cast<bf16*>(smem + 6 * L::tile);  // [64 keys, 64 queries] dSᵀ
  float* sgk = reinterpret_cast<float*>(smem + 6 * L::tile + L::ds_tile);  // [64] key gates
  float* slse = sgk + kChunk;                                              // [2][64]
  float* sdelta = slse + 2 * kChunk;                                       // [2][64]
  float* sgq = sdelta + 2 * kChunk;                                        // [2][64]
  auto stage_tile = [](bf16* first, int st) {  // stage st of a two-stage pair of tiles
    return reinterpret_cast<bf16*>(reinterpret_cast<unsigned char*>(first) + st * L::tile);
  };

  const KeyMajorBlock<bf16, O, D, kCausal> blk(a);
  const int T = blk.T, nblocks = blk.nblocks, k0 = blk.k0, w = warp_id();
  auto issue = [&](int qb) {
    const int st = qb & 1, q0 = qb * kChunk;
    wgmma::load_tile_async<kChunk, D>(stage_tile(sq, st), blk.q + int64_t(q0) * D, D, T - q0);
    wgmma::load_tile_async<kChunk, D>(stage_tile(sdo, st), blk.d_o + int64_t(q0) * D, D, T - q0);
    load_query_rows_async(QueryRows{slse + st * kChunk, sdelta + st * kChunk, sgq + st * kChunk}, a, blk, q0);
  };
  wgmma::load_tile_async<kChunk, D>(sk, a.k + (int64_t(blockIdx.y) * a.k_slice + k0) * D, D, T - k0);
  wgmma::load_tile_async<kChunk, D>(sv, a.v + (blk.base + k0) * D, D, T - k0);
  if (blk.gate) load_row_values_async(sgk, blk.gate + k0, kChunk, T - k0);
  if (blk.first < nblocks) issue(blk.first);
  cp_async_commit();

  const float scale2 = a.scale * kLog2e, gate2 = a.gate_scale * kLog2e;
  float acc_dk[NTD][4], acc_dv[NTD][4], col_sum[2] = {0.f, 0.f};
  zero(acc_dk);
  zero(acc_dv);
  for (int qb = blk.first; qb < nblocks; ++qb) {
    wgmma::next_stage(qb + 1 < nblocks, [&] { issue(qb + 1); });
    const int st = qb & 1, q0 = qb * kChunk;
    const bf16* tq = stage_tile(sq, st);
    const bf16* tdo = stage_tile(sdo, st);
    // Sᵀ = K Qᵀ and dPᵀ = V dOᵀ: 64 keys × 64 queries, this warp's 16 keys in registers.
    float p[8][4], ds[8][4];
    wgmma::rows_by_rows<D>(p, sk, tq, ds, sv, tdo);
    const QueryRows rows{slse + st * kChunk, sdelta + st * kChunk, sgq + st * kChunk};
    if (blk.masked(qb))
      softmax_gradients<true, kCausal, false>(p, ds, col_sum, rows, blk.gate != nullptr, sgk, q0, k0, T, scale2,
                                             gate2);
    else
      softmax_gradients<false, kCausal, false>(p, ds, col_sum, rows, blk.gate != nullptr, sgk, q0, k0, T, scale2,
                                              gate2);
    // dV += P dO and dK += dS Q (keys × D, contracted over the 64 queries), A from registers.
    Frag16<bf16> fp[4], fds[4];
    wgmma::to_fragments(fp, p);
    wgmma::to_fragments(fds, ds);
    wgmma::fence_operands(acc_dv);
    wgmma::fence_operands(acc_dk);
    wgmma::arrive();
    wgmma::issue_regs_by_tile<D>(acc_dv, fp, tdo);
    wgmma::issue_regs_by_tile<D>(acc_dk, fds, tq);
    wgmma::commit();
    // dSᵀ to shared memory (the products above read registers, Q and dO, not this tile).
    wgmma::store_acc<kChunk>(ds, sds, 16 * w);
    wgmma::fence_shared_for_tensor_cores();
    __syncthreads();
    // dQ = dS K for the 64 queries (this warp's 16 in registers), one 64-column half at a time.
    const int row0 = q0 + 16 * w;
#pragma unroll
    for (int h = 0; h < kPanels; ++h) {
      float acc_dq[8][4];
      wgmma::tile_by_tile(acc_dq, sds, sk, h);
      if (h == 0) wgmma::fence_operands(fp), wgmma::fence_operands(fds);  // the dV, dK products are done too
      atomic_add_acc(acc_dq, blk.dq + int64_t(row0) * D + h * wgmma::kPanelCols, D, T - row0, a.scale);
    }
  }
  cp_async_wait<0>();  // a key block that meets no query block still has its K, V copies in flight
  wgmma::fence_operands(acc_dk);
  wgmma::fence_operands(acc_dv);
  store_key_gradients(a, blk, acc_dk, acc_dv);
  store_gate_gradients(a, blk, col_sum);
#else
  __trap();  // launched only where hopper_kernels() holds
#endif
}

// Queues the Hopper kernel for head dimension D (64 or 128).
template <typename O, int D>
void key_major_backward_hopper(const KeyMajorBackwardArgs<bf16, O>& a, cudaStream_t stream) {
  static_assert(D % wgmma::kPanelCols == 0, "the Hopper kernel takes whole 64-column panels");
  const dim3 grid(unsigned((a.length + tiles::kChunk - 1) / tiles::kChunk), unsigned(a.batch_heads));
  auto kernel = a.span_blocks == 0 ? key_major_backward_hopper_kernel<O, D, true>
                                   : key_major_backward_hopper_kernel<O, D, false>;
  launch_kernel(kernel, grid, KeyMajorHopperLayout<D>::bytes, stream, "key_major_backward_hopper_kernel", a);
}

}  // namespace pathbench::cuda::detail
