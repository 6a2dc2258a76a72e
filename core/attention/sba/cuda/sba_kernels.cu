// Stick-breaking attention, CUDA. One block per 64 query rows. The forward scans key blocks from
// the diagonal leftwards; inside a block the softplus terms of the keys to the right of each key come
// from a suffix sum across the row (registers and quad shuffles), the keys of blocks already seen
// from a running carry. It stops once every row's carry passes kVanishingCarry (sba_steps.cuh: all
// weights further left would be below 2⁻¹²⁸, which the exponent flushes to zero anyway), and keeps
// for the backward each row's softplus sum over the keys scanned, as a float pair (hi + lo,
// compensated summation), and the leftmost key block scanned. The backward is one pass from that
// block rightwards (math in sba_kernels.h):
//   g_ij = a_ij·(dO_i·v_j − r·dO_i·v_i),  dz_ij = g_ij·σ(−z_ij) − σ(z_ij)·Σ_{j'<j} g_ij',
// so the sum over earlier keys is a running carry plus a prefix sum inside the block, and a_ij's sum
// over later keys is the block's suffix sum plus what S_i leaves after the blocks seen so far
// (kept as a float pair, so the subtraction loses nothing that matters); in the blocks the forward
// did not reach a, g and dz are all zero. r = 1 when the remainder
// goes to the current token. dq stays in registers; dk, dv are accumulated with atomics.
// Logits and softplus sums are kept in log₂ units (·log₂e), so each weight is one 2ˣ; only the
// diagonal block and the last block (rows past T) test which entries are visible. These are the
// portable (mma.sync) kernels; on Hopper, bf16 at D = 64 and 128 runs sba_hopper.cuh's.
#include <type_traits>

#include "core/attention/cuda/tiles.cuh"
#include "core/attention/sba/cuda/sba_hopper.cuh"
#include "core/attention/sba/cuda/sba_kernels.h"
#include "core/attention/sba/cuda/sba_steps.cuh"
#include "core/cuda/hopper.h"

namespace pathbench::cuda {

namespace {

using namespace tiles;
using namespace sba;

template <typename S, int D>
struct SbaLayout {
  static constexpr int ld = stride_of<S>(D);
  static constexpr int lds = stride_of<S>(kChunk);
  static constexpr int tile = tile_elems<S>(kChunk, D);
  static constexpr size_t forward_bytes = 5 * tile * sizeof(S);  // Q + 2 × (K, V)
  // Q, dO, stages × (K, V), then a and dz [64, 64] tiles.
  static constexpr size_t backward_bytes(int stages) {
    return (2 + 2 * stages) * tile * sizeof(S) + 2 * kChunk * lds * sizeof(S);
  }
  static constexpr int backward_stages = backward_bytes(2) <= 227 * 1024 ? 2 : 1;
};

template <typename S, int D>
__global__ void __launch_bounds__(kThreads) sba_forward_kernel(StickBreakingCudaArgs<S> a, S* o, SavedSums saved) {
  using L = SbaLayout<S, D>;
  constexpr int NTD = D / 8, KTD = D / 16, ld = L::ld;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  S* sq = reinterpret_cast<S*>(smem_raw);
  S* sk = sq + L::tile;
  S* sv = sk + 2 * L::tile;

  const QueryBlock blk(a.length);
  const int T = blk.T, qb = blk.qb, q0 = blk.q0, row0 = blk.row0, w = warp_id();
  const int64_t base = blk.base;
  const S* k = a.k + base * D;
  const S* v = a.v + base * D;
  const float scale2 = a.scale * kLog2e;
  constexpr bool kApprox = !std::is_same_v<S, float>;

  auto issue = [&](int it) {
    const int st = it & 1, k0 = (qb - it) * kChunk;
    load_tile_async<S, kChunk, D>(sk + st * L::tile, k + int64_t(k0) * D, D, T - k0, KeyOrder{});
    load_tile_async<S, kChunk, D>(sv + st * L::tile, v + int64_t(k0) * D, D, T - k0, KeyOrder{});
  };
  load_tile_async<S, kChunk, D>(sq, a.q + (base + q0) * D, D, T - q0);
  issue(0);
  cp_async_commit();

  ForwardRows rows;
  float acc_o[NTD][4];
  zero(acc_o);
  int first = 0;  // the leftmost key block scanned
  for (int it = 0; it <= qb; ++it) {
    cp_async_wait<0>();
    __syncthreads();
    if (it < qb) issue(it + 1);
    cp_async_commit();
    const int st = it & 1, k0 = (qb - it) * kChunk;
    float z[8][4];
    zero(z);
    mma_ss<BLayout::NK, false, 8, KTD>(z, sq + 16 * w * ld, ld, sk + st * L::tile, ld);
    forward_weights<kApprox>(z, rows, it == 0 || blk.masked_rows, scale2, row0, k0, T);
    mma_acc<BLayout::KN>(acc_o, z, sv + st * L::tile, ld);
    first = qb - it;
    if (__syncthreads_and(rows_vanished(rows, row0, T))) break;
  }
  save_forward_sums(saved, rows, blk, first);
  if (a.remainder_to_current) add_remainder(acc_o, rows, v, row0, T);
  store_acc(acc_o, o + (base + row0) * D, D, T - row0);
}

// One pass over key blocks first … qb: dq in registers; dk, dv atomically into zeroed fp32 dk_acc, dv_acc.
template <typename S, int D>
__global__ void __launch_bounds__(kThreads) sba_backward_kernel(StickBreakingCudaArgs<S> a, SavedSums saved,
                                                                 const S* d_o, S* dq, float* dk_acc, float* dv_acc) {
  using L = SbaLayout<S, D>;
  constexpr int NTD = D / 8, KTD = D / 16, ld = L::ld, lds = L::lds, kStages = L::backward_stages;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  S* sq = reinterpret_cast<S*>(smem_raw);
  S* sdo = sq + L::tile;
  S* sk = sdo + L::tile;             // [stages][64, D]
  S* sv = sk + kStages * L::tile;    // [stages][64, D]
  S* sa = sv + kStages * L::tile;    // [64 queries, 64 keys] weights a
  S* sdz = sa + kChunk * lds;        // [64 queries, 64 keys] dz

  const QueryBlock blk(a.length);
  const int T = blk.T, qb = blk.qb, q0 = blk.q0, row0 = blk.row0, w = warp_id();
  const int64_t base = blk.base;
  const S* k = a.k + base * D;
  const S* v = a.v + base * D;
  const float scale2 = a.scale * kLog2e;
  constexpr bool kApprox = !std::is_same_v<S, float>;

  auto issue = [&](int it) {
    const int st = it % kStages, k0 = it * kChunk;
    load_tile_async<S, kChunk, D>(sk + st * L::tile, k + int64_t(k0) * D, D, T - k0, KeyOrder{});
    load_tile_async<S, kChunk, D>(sv + st * L::tile, v + int64_t(k0) * D, D, T - k0, KeyOrder{});
  };
  load_tile_async<S, kChunk, D>(sq, a.q + (base + q0) * D, D, T - q0);
  load_tile_async<S, kChunk, D>(sdo, d_o + (base + q0) * D, D, T - q0);
  const int first = saved.first_block_of(qb);  // the blocks before it hold no weight
  issue(first);
  cp_async_commit();

  BackwardRows rows = backward_rows<D>(a, saved, d_o, base, row0);
  float acc_dq[NTD][4];
  zero(acc_dq);
  for (int it = first; it <= qb; ++it) {
    cp_async_wait<0>();
    __syncthreads();
    if constexpr (kStages == 2) {
      if (it < qb) issue(it + 1);
      cp_async_commit();
    }
    const int st = it % kStages, k0 = it * kChunk;
    const S* tk = sk + st * L::tile;
    float z[8][4], dpv[8][4], dz[8][4];
    zero(z);
    zero(dpv);
    mma_ss<BLayout::NK, false, 8, KTD>(z, sq + 16 * w * ld, ld, tk, ld);
    mma_ss<BLayout::NK, false, 8, KTD>(dpv, sdo + 16 * w * ld, ld, sv + st * L::tile, ld);
    // z ← a, dpv ← g, dz ← the gradient of z; kMasked: the diagonal block, or rows past T.
    if (it == qb || blk.masked_rows)
      backward_weights_and_gradients<kApprox, true>(z, dpv, dz, rows, scale2, row0, k0, T);
    else
      backward_weights_and_gradients<kApprox, false>(z, dpv, dz, rows, scale2, row0, k0, T);
    mma_acc<BLayout::KN>(acc_dq, dz, tk, ld);
    store_acc(z, sa + 16 * w * lds, lds);
    store_acc(dz, sdz + 16 * w * lds, lds);
    __syncthreads();
    // dK and dV rows 16w … 16w+15 of the block's keys in KeyOrder: dzᵀ·Q and aᵀ·dO.
    {
      float acc[NTD][4];
      zero(acc);
      mma_ss<BLayout::KN, true, NTD, 4>(acc, sdz + 16 * w, lds, sq, ld);
      atomic_add_acc(acc, dk_acc + (base + k0) * D, D, T - k0, a.scale, WarpKeyOrder{w});
    }
    {
      float acc[NTD][4];
      zero(acc);
      mma_ss<BLayout::KN, true, NTD, 4>(acc, sa + 16 * w, lds, sdo, ld);
      atomic_add_acc(acc, dv_acc + (base + k0) * D, D, T - k0, 1.f, WarpKeyOrder{w});
    }
    if constexpr (kStages == 1) {
      __syncthreads();
      if (it < qb) issue(it + 1);
      cp_async_commit();
    }
  }
  store_acc(acc_dq, dq + (base + row0) * D, D, T - row0, a.scale);
  if (a.remainder_to_current) {
    float acc[NTD][4];
    load_acc(acc, sdo + 16 * w * ld, ld);
    remainder_weights(acc, rows);
    atomic_add_acc(acc, dv_acc + (base + row0) * D, D, T - row0);
  }
}

// For bf16 storage, fp32 accumulators for dk and dv ([BH, T, D] each); none for fp32 (dk, dv
// accumulate in place).
struct SbaWorkspace {
  float *dk_acc, *dv_acc;
  size_t bytes;
};
template <typename S>
SbaWorkspace carve_workspace(void* base, const StickBreakingCudaArgs<S>& a) {
  WorkspaceCarver c(base);  // 256-byte pieces: the vector atomics need 16-byte alignment
  const int64_t n = std::is_same_v<S, float> ? 0 : a.batch_heads * a.length * a.head_dim;
  SbaWorkspace w{n ? c.take<float>(n) : nullptr, n ? c.take<float>(n) : nullptr, 0};
  w.bytes = c.bytes();
  return w;
}

// The saved values' places (SavedSums): hi at [0, BH·T), lo at [BH·T, 2·BH·T) floats, then the
// query blocks' first key blocks, [BH, ⌈T/64⌉] ints.
template <typename S>
int64_t saved_rows(const StickBreakingCudaArgs<S>& a) {
  return a.batch_heads * a.length;
}
template <typename S>
int query_blocks(const StickBreakingCudaArgs<S>& a) {  // ⌈T/64⌉, a slice's query blocks
  return int((a.length + kChunk - 1) / kChunk);
}
template <typename S>
int64_t saved_blocks(const StickBreakingCudaArgs<S>& a) {
  return a.batch_heads * query_blocks(a);
}
template <typename S>
SavedSums saved_sums(const StickBreakingCudaArgs<S>& a, Workspace saved) {
  float* sums = static_cast<float*>(saved.data);
  return {sums, sums + saved_rows(a), reinterpret_cast<int*>(sums + 2 * saved_rows(a)), query_blocks(a)};
}

}  // namespace

template <typename S>
size_t stick_breaking_saved_bytes(const StickBreakingCudaArgs<S>& a) {
  return size_t(2 * saved_rows(a)) * sizeof(float) + size_t(saved_blocks(a)) * sizeof(int);
}

template <typename S>
void stick_breaking_forward(const StickBreakingCudaArgs<S>& a, S* o, Workspace saved, cudaStream_t stream) {
  check_attention_shape(a.batch_heads, a.length, a.head_dim, "stick_breaking_forward (cuda)");
  check_workspace(saved, stick_breaking_saved_bytes(a), "stick_breaking_forward (cuda) saved row sums");
  const SavedSums sums = saved_sums(a, saved);
  const dim3 grid(unsigned(sums.query_blocks), unsigned(a.batch_heads));
  with_head_dim(a.head_dim, [&]<int D>() {
    if constexpr (wgmma::kHasHopperForm<S, D>) {
      if (choose_hopper_form())
        return launch_kernel(sba_forward_hopper_kernel<D>, grid, SbaHopperLayout<D>::forward_bytes, stream,
                             "sba_forward_hopper_kernel", a, o, sums);
    }
    launch_kernel(sba_forward_kernel<S, D>, grid, SbaLayout<S, D>::forward_bytes, stream, "sba_forward_kernel", a, o,
                  sums);
  });
}

template <typename S>
size_t stick_breaking_backward_workspace_bytes(const StickBreakingCudaArgs<S>& a) {
  return carve_workspace(nullptr, a).bytes;
}

template <typename S>
void stick_breaking_backward(const StickBreakingCudaArgs<S>& a, Workspace saved, const S* d_o, S* dq, S* dk, S* dv,
                             Workspace ws, cudaStream_t stream) {
  check_attention_shape(a.batch_heads, a.length, a.head_dim, "stick_breaking_backward (cuda)");
  check_workspace(saved, stick_breaking_saved_bytes(a), "stick_breaking_backward (cuda) saved row sums");
  check_workspace(ws, stick_breaking_backward_workspace_bytes(a), "stick_breaking_backward (cuda)");
  const int64_t n = a.batch_heads * a.length * a.head_dim;
  constexpr bool staged = !std::is_same_v<S, float>;
  const SbaWorkspace w = carve_workspace(ws.data, a);
  const SavedSums sums = saved_sums(a, saved);
  float* dk_acc = staged ? w.dk_acc : reinterpret_cast<float*>(dk);
  float* dv_acc = staged ? w.dv_acc : reinterpret_cast<float*>(dv);
  check_cuda(cudaMemsetAsync(dk_acc, 0, n * sizeof(float), stream), "stick_breaking_backward: zero dk");
  check_cuda(cudaMemsetAsync(dv_acc, 0, n * sizeof(float), stream), "stick_breaking_backward: zero dv");
  const dim3 grid(unsigned(sums.query_blocks), unsigned(a.batch_heads));
  with_head_dim(a.head_dim, [&]<int D>() {
    if constexpr (wgmma::kHasHopperForm<S, D>) {
      if (choose_hopper_form())  // a block per two query blocks
        return launch_kernel_threads(sba_backward_hopper_kernel<D>, dim3((grid.x + 1) / 2, grid.y),
                                     kPairThreads, SbaHopperLayout<D>::backward_bytes, stream,
                                     "sba_backward_hopper_kernel", a, sums, d_o, dq, dk_acc, dv_acc);
    }
    using L = SbaLayout<S, D>;
    launch_kernel(sba_backward_kernel<S, D>, grid, L::backward_bytes(L::backward_stages), stream,
                  "sba_backward_kernel", a, sums, d_o, dq, dk_acc, dv_acc);
  });
  if (staged) {
    detail::convert_from_float(dk_acc, dk, n, stream);
    detail::convert_from_float(dv_acc, dv, n, stream);
  }
}

#define PATHBENCH_INSTANTIATE(S)                                                                                    \
  template size_t stick_breaking_saved_bytes<S>(const StickBreakingCudaArgs<S>&);                               \
  template void stick_breaking_forward<S>(const StickBreakingCudaArgs<S>&, S*, Workspace, cudaStream_t);           \
  template size_t stick_breaking_backward_workspace_bytes<S>(const StickBreakingCudaArgs<S>&);                     \
  template void stick_breaking_backward<S>(const StickBreakingCudaArgs<S>&, Workspace, const S*, S*, S*, S*,       \
                                           Workspace, cudaStream_t);
PATHBENCH_INSTANTIATE(float)
PATHBENCH_INSTANTIATE(bf16)
#undef PATHBENCH_INSTANTIATE

}  // namespace pathbench::cuda
