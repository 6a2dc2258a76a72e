// The key-major softmax-attention backward on Hopper (sm_90a, bf16, D = 64 or 128): the algorithm of
// key_major_backward.cuh — one block per 64 keys streaming the query blocks that see them, P and dS
// recomputed, dK and dV in registers, s·dS·K added into the dQ accumulator with atomics — with
// every product a warpgroup product (wgmma.cuh) that reads its shared operands directly, once per
// block instead of once per warp: Sᵀ = K Qᵀ and dPᵀ = V dOᵀ (both operands K-major), dV += Pᵀ dO and
// dK += dSᵀ Q (Pᵀ, dSᵀ from registers, keys × queries; dO, Q N-major), dQ = dS K (the dSᵀ tile
// through shared memory, read M-major; K N-major). Tiles are swizzled 64-column panels; D = 128
// runs each 64-column half as its own product. At D = 128 the backward runs in blocks of two
// warpgroups per two key blocks (key_major_backward_pair_hopper_kernel).
#pragma once
#include "core/attention/cuda/block_pairs.h"
#include "core/attention/cuda/key_major_tile.cuh"
#include "core/attention/cuda/tiles.cuh"
#include "core/attention/cuda/wgmma.cuh"

namespace pathbench::cuda::detail {

// Key block blockIdx.x of slice blockIdx.y: the query blocks it meets and where its slices start.
// (The portable kernel keeps these as locals: in this struct its compact form took 204 registers
// instead of 168.)
template <typename S, typename O, typename A, int D, bool kCausal>
struct KeyMajorBlock {
  int T, nblocks, kb, k0, first;  // first: the first query block that sees these keys
  int64_t base;                   // the slice's first row in [BH, T, ·] tensors
  const S* q;                     // the queries this key block meets (PaTH: span j's moved copies)
  A* dq;                          // the same rows of the dq accumulator
  const S* d_o;
  const float* gate;  // the slice's cumulative log gates, or null
  __device__ explicit KeyMajorBlock(const KeyMajorBackwardArgs<S, O, A>& a, int key_block = int(blockIdx.x))
      : T(int(a.length)),
        nblocks((T + tiles::kChunk - 1) / tiles::kChunk),
        kb(key_block),
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
template <typename S, typename O, typename A, int D, bool kCausal>
__device__ __forceinline__ void load_query_rows_async(const QueryRows& rows, const KeyMajorBackwardArgs<S, O, A>& a,
                                                      const KeyMajorBlock<S, O, A, D, kCausal>& blk, int q0) {
  using namespace tiles;
  load_row_values_async(rows.lse, a.lse + blk.base + q0, kChunk, blk.T - q0);
  load_row_values_async(rows.delta, a.delta + blk.base + q0, kChunk, blk.T - q0);
  if (blk.gate) load_row_values_async(rows.gate, blk.gate + q0, kChunk, blk.T - q0);
}

// The key block's dK, dV rows of this warp, from its accumulators: every output
// row of the slice is written (rows past T, when out_slice pads them, get zeros).
template <typename S, typename O, typename A, int D, bool kCausal, int NT>
__device__ __forceinline__ void store_key_gradients(const KeyMajorBackwardArgs<S, O, A>& a,
                                                    const KeyMajorBlock<S, O, A, D, kCausal>& blk,
                                                    const float (&acc_dk)[NT][4], const float (&acc_dv)[NT][4]) {
  using namespace tiles;
  const int row0 = blk.k0 + 16 * warp_id(), valid = int(a.out_slice) - row0;
  const int64_t out = int64_t(blockIdx.y) * a.out_slice + row0;
  store_acc(acc_dk, a.dk + out * D, D, valid, a.scale);
  store_acc(acc_dv, a.dv + out * D, D, valid);
}
template <typename S, typename O, typename A, int D, bool kCausal>
__device__ __forceinline__ void store_gate_gradients(const KeyMajorBackwardArgs<S, O, A>& a,
                                                     const KeyMajorBlock<S, O, A, D, kCausal>& blk,
                                                     const float (&col_sum)[2]) {
  using namespace tiles;
  if (!a.d_gate) return;
  const int row0 = blk.k0 + 16 * warp_id(), valid = int(a.out_slice) - row0;
  const int64_t out = int64_t(blockIdx.y) * a.out_slice + row0;
  const float dg[2] = {-a.gate_scale * quad_sum(col_sum[0]), -a.gate_scale * quad_sum(col_sum[1])};
  store_row_pair(a.d_gate + out, dg, valid);
}

// One warpgroup's step for a query block: P and dS of its 64 keys (Sᵀ = K Qᵀ and dPᵀ = V dOᵀ from the
// key tiles sk, sv and the query block's tq, tdo; kMasked-style masking where `masked`), then
// dV += P dO and dK += dS Q issued from registers and left running (fp, fds stay their operands until
// the caller's next wait). ds returns dS for the caller's dSᵀ tile.
template <bool kCausal, int D>
__device__ __forceinline__ void key_rows_step(float (&ds)[8][4], float (&acc_dk)[D / 8][4], float (&acc_dv)[D / 8][4],
                                              tiles::Frag16<bf16> (&fp)[4], tiles::Frag16<bf16> (&fds)[4],
                                              float (&col_sum)[2], const bf16* sk, const bf16* sv, const bf16* tq,
                                              const bf16* tdo, const QueryRows& rows, bool masked, bool gated,
                                              const float* key_gate, int q0, int k0, int T, float scale2,
                                              float gate2) {
  float p[8][4];
  wgmma::rows_by_rows<D>(p, sk, tq, ds, sv, tdo);
  if (masked)
    softmax_gradients<true, kCausal, false>(p, ds, col_sum, rows, gated, key_gate, q0, k0, T, scale2, gate2);
  else
    softmax_gradients<false, kCausal, false>(p, ds, col_sum, rows, gated, key_gate, q0, k0, T, scale2, gate2);
  wgmma::to_fragments(fp, p);
  wgmma::to_fragments(fds, ds);
  wgmma::fence_operands(acc_dv);
  wgmma::fence_operands(acc_dk);
  wgmma::arrive();
  wgmma::issue_regs_by_tile<D>(acc_dv, fp, tdo);
  wgmma::issue_regs_by_tile<D>(acc_dk, fds, tq);
  wgmma::commit();
}

template <int D>
struct KeyMajorHopperLayout {
  static constexpr int tile = wgmma::tile_bytes(tiles::kChunk, D);  // a swizzled [64, D] bf16 tile
  static constexpr int ds_tile = wgmma::tile_bytes(tiles::kChunk, tiles::kChunk);
  // K, V, 2 stages × (Q, dO), the dSᵀ tile (all multiples of 1,024 bytes), then 64 key gates and
  // 2 stages × (lse, δ, query gates), plus room to align the start to the swizzle's period.
  static constexpr size_t bytes = 6 * tile + ds_tile + 7 * tiles::kChunk * sizeof(float) + wgmma::kSwizzleBytes;
};

// kCausal as for key_major_backward_kernel. Launched at D = 64 (the pair kernel below takes D = 128):
// three blocks per multiprocessor (60 KB of shared memory each).
template <typename O, typename A, int D, bool kCausal>
__global__ void __launch_bounds__(tiles::kThreads, 3)
    key_major_backward_hopper_kernel(KeyMajorBackwardArgs<bf16, O, A> a) {
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

  const KeyMajorBlock<bf16, O, A, D, kCausal> blk(a);
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
    // P, dS; dV += P dO and dK += dS Q (keys × D, contracted over the 64 queries) left running.
    float ds[8][4];
    Frag16<bf16> fp[4], fds[4];
    key_rows_step<kCausal, D>(ds, acc_dk, acc_dv, fp, fds, col_sum, sk, sv, tq, tdo,
                              QueryRows{slse + st * kChunk, sdelta + st * kChunk, sgq + st * kChunk}, blk.masked(qb),
                              blk.gate != nullptr, sgk, q0, k0, T, scale2, gate2);
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

// The backward at D = 128 in blocks of two warpgroups per two key blocks (256 threads, one block per
// multiprocessor where the kernel above would run two): warpgroup w takes key block kb + w of the
// pair (block_pairs.h) with its own K, V tiles, dK, dV registers and 64 key gates, both share
// each query block's Q, dO tiles and per-row values, and after one barrier warpgroup w forms the
// 64-column half w of dQ = dS K over the 128 keys (two accumulating K = 64 halves) and adds it with
// one set of atomics: half the Q, dO copies and half the dq atomics of two one-warpgroup blocks. A
// warpgroup whose key block does not meet the query block (causal: it lies right of the pair's first
// query block) or is not the pair's (past T; across spans: in the next span, when the span has an
// odd number of blocks) stores a zero dSᵀ tile and forms nothing, and only the pair's own blocks
// store dK, dV and gate gradients.
struct KeyMajorPairHopperLayout {
  static constexpr int D = 128;
  static constexpr int tile = wgmma::tile_bytes(tiles::kChunk, D);
  static constexpr int ds_tile = wgmma::tile_bytes(tiles::kChunk, tiles::kChunk);
  // 2 × (K, V), 2 stages × (Q, dO), 2 dSᵀ tiles, then 128 key gates and 2 stages × (lse, δ, query gates)
  static constexpr size_t bytes =
      8 * tile + 2 * ds_tile + (2 + 6) * tiles::kChunk * sizeof(float) + wgmma::kSwizzleBytes;
};
constexpr int kPairThreads = 2 * tiles::kThreads;

template <typename O, typename A, bool kCausal>
__global__ void __launch_bounds__(kPairThreads, 1)
    key_major_backward_pair_hopper_kernel(KeyMajorBackwardArgs<bf16, O, A> a) {
#if PATHBENCH_SM90A_DEVICE
  using namespace tiles;
  using L = KeyMajorPairHopperLayout;
  constexpr int D = L::D, NTD = D / 8;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = wgmma::align_to_swizzle(smem_raw);
  auto tile_at = [smem](int i) { return reinterpret_cast<bf16*>(smem + i * L::tile); };
  auto sds = [smem](int h) {  // [2][64 keys, 64 queries] dSᵀ of key block 2p + h
    return reinterpret_cast<bf16*>(smem + 8 * L::tile + h * L::ds_tile);
  };
  float* sgk = reinterpret_cast<float*>(smem + 8 * L::tile + 2 * L::ds_tile);  // [128] key gates
  float* slse = sgk + 2 * kChunk;                                               // [2][64]
  float* sdelta = slse + 2 * kChunk;                                            // [2][64]
  float* sgq = sdelta + 2 * kChunk;                                             // [2][64]
  // tiles 0, 1: K of key blocks 2p, 2p+1; 2, 3: their V; 4, 5: Q stages; 6, 7: dO stages
  auto sk = [&](int g) { return tile_at(g); };
  auto sv = [&](int g) { return tile_at(2 + g); };
  auto sq = [&](int st) { return tile_at(4 + st); };
  auto sdo = [&](int st) { return tile_at(6 + st); };

  const KeyMajorBlock<bf16, O, A, D, kCausal> blk(a, pair_first_block(kCausal, int(blockIdx.x), a.span_blocks));
  const int T = blk.T, nblocks = blk.nblocks, k0 = blk.k0;  // k0: the pair's first key
  const int g = warp_id() / 4, w = warp_id() % 4, kb = blk.kb + g;  // this warpgroup's key block
  const bool own = pair_owns_block(kCausal, blk.kb, g, nblocks, a.span_blocks);
  auto issue = [&](int qb) {
    const int st = qb & 1, q0 = qb * kChunk;
    wgmma::load_tile_async<kChunk, D, kPairThreads>(sq(st), blk.q + int64_t(q0) * D, D, T - q0);
    wgmma::load_tile_async<kChunk, D, kPairThreads>(sdo(st), blk.d_o + int64_t(q0) * D, D, T - q0);
    load_query_rows_async(QueryRows{slse + st * kChunk, sdelta + st * kChunk, sgq + st * kChunk}, a, blk, q0);
  };
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int kh = k0 + h * kChunk, at = min(kh, T - 1);
    wgmma::load_tile_async<kChunk, D, kPairThreads>(sk(h), a.k + (int64_t(blockIdx.y) * a.k_slice + at) * D, D, T - kh);
    wgmma::load_tile_async<kChunk, D, kPairThreads>(sv(h), a.v + (blk.base + at) * D, D, T - kh);
  }
  if (blk.gate) load_row_values_async<kPairThreads>(sgk, blk.gate + k0, 2 * kChunk, T - k0);
  if (blk.first < nblocks) issue(blk.first);
  cp_async_commit();

  const float scale2 = a.scale * kLog2e, gate2 = a.gate_scale * kLog2e;
  float acc_dk[NTD][4], acc_dv[NTD][4], col_sum[2] = {0.f, 0.f};
  zero(acc_dk);
  zero(acc_dv);
  Frag16<bf16> fp[4], fds[4];  // P and dS as A operands, read until the dQ product's wait
  for (int qb = blk.first; qb < nblocks; ++qb) {
    wgmma::next_stage(qb + 1 < nblocks, [&] { issue(qb + 1); });
    const int st = qb & 1, q0 = qb * kChunk;
    const bf16* tq = sq(st);
    const bf16* tdo = sdo(st);
    if (own && (!kCausal || qb >= kb)) {  // uniform across the warpgroup
      // the step indexes keys as k0 + 16·warp_id() + row: warpgroup 1's warps 4…7 are its block's keys
      const bool masked = q0 + kChunk > T || (kCausal ? qb == kb : (kb + 1) * kChunk > T);
      float ds[8][4];
      key_rows_step<kCausal, D>(ds, acc_dk, acc_dv, fp, fds, col_sum, sk(g), sv(g), tq, tdo,
                                QueryRows{slse + st * kChunk, sdelta + st * kChunk, sgq + st * kChunk}, masked,
                                blk.gate != nullptr, sgk, q0, k0, T, scale2, gate2);
      wgmma::store_acc<kChunk>(ds, sds(g), 16 * w);
    } else {
      float none[8][4];
      zero(none);
      wgmma::store_acc<kChunk>(none, sds(g), 16 * w);
    }
    wgmma::fence_shared_for_tensor_cores();
    __syncthreads();
    // Half g of dQ = dS K for the 64 queries over both key blocks (this warp's 16 queries in registers).
    float acc_dq[8][4];
    wgmma::arrive();
#pragma unroll
    for (int h = 0; h < 2; ++h) wgmma::issue_tile_by_tile(acc_dq, sds(h), sk(h), g, 0, h > 0);
    wgmma::commit();
    wgmma::wait<0>();  // the dV, dK products are done too
    wgmma::fence_operands(acc_dq);
    wgmma::fence_operands(fp);
    wgmma::fence_operands(fds);
    const int row0 = q0 + 16 * w;
    atomic_add_acc(acc_dq, blk.dq + int64_t(row0) * D + g * wgmma::kPanelCols, D, T - row0, a.scale);
  }
  cp_async_wait<0>();  // a pair that meets no query block still has its K, V copies in flight
  wgmma::fence_operands(acc_dk);
  wgmma::fence_operands(acc_dv);
  if (!own) return;  // across spans, the next span's pair writes that block's rows
  store_key_gradients(a, blk, acc_dk, acc_dv);
  store_gate_gradients(a, blk, col_sum);
#else
  __trap();  // launched only where hopper_kernels() holds
#endif
}

// Queues the Hopper kernel for head dimension D (64 or 128): at D = 128 the kernel of two warpgroups,
// over ⌈blocks / 2⌉ pairs (causal) or ⌈span_blocks / 2⌉ pairs a span (across spans).
template <typename O, typename A, int D>
void key_major_backward_hopper(const KeyMajorBackwardArgs<bf16, O, A>& a, cudaStream_t stream) {
  static_assert(D == 64 || D == 128, "the Hopper kernels take one or two 64-column panels");
  const int blocks = int((a.length + tiles::kChunk - 1) / tiles::kChunk), span = a.span_blocks;
  if constexpr (D == 128) {
    const int pairs = block_pairs(span == 0, blocks, span);
    auto kernel = span == 0 ? key_major_backward_pair_hopper_kernel<O, A, true>
                            : key_major_backward_pair_hopper_kernel<O, A, false>;
    launch_kernel_threads(kernel, dim3(unsigned(pairs), unsigned(a.batch_heads)), kPairThreads,
                          KeyMajorPairHopperLayout::bytes, stream, "key_major_backward_pair_hopper_kernel", a);
  } else {
    auto kernel = span == 0 ? key_major_backward_hopper_kernel<O, A, D, true>
                            : key_major_backward_hopper_kernel<O, A, D, false>;
    launch_kernel(kernel, dim3(unsigned(blocks), unsigned(a.batch_heads)), KeyMajorHopperLayout<D>::bytes, stream,
                  "key_major_backward_hopper_kernel", a);
  }
}

}  // namespace pathbench::cuda::detail
