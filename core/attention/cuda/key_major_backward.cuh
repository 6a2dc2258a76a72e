// The key-major softmax-attention backward kernel (FlashAttention-2 style) shared by causal softmax
// attention (softmax_kernels.cu) and PaTH's cross-span pass (path_backward.cu): one block per 64
// keys streams the query blocks that see them through a two-stage cp.async pipeline, recomputes
// P = exp(s·qᵀk + bias − lse) and dS = P ∘ (dP − δ), keeps dK and dV in registers and adds s·dS·K
// into a dQ accumulator (fp32, or bf16 where the caller asks: key_major_tile.cuh) with atomics.
// This is the portable form (mma.sync, any GPU the build targets); on Hopper, bf16 at D = 64 and
// 128 goes to the wgmma form (key_major_backward_hopper.cuh).
#pragma once
#include <type_traits>

#include "core/attention/cuda/key_major_backward_hopper.cuh"
#include "core/attention/cuda/key_major_tile.cuh"
#include "core/attention/cuda/tiles.cuh"
#include "core/cuda/hopper.h"

namespace pathbench::cuda {

namespace detail {

template <typename S, int D>
struct KeyMajorLayout {
  static constexpr int ld = tiles::stride_of<S>(D), lds = tiles::stride_of<S>(tiles::kChunk);
  static constexpr int tile = tiles::tile_elems<S>(tiles::kChunk, D);
  // K, V, stages × (Q, dO), the dSᵀ tile, then 64 key gates + stages × (lse, δ, query gates).
  static constexpr size_t bytes(int stages) {
    return (2 + 2 * stages) * tile * sizeof(S) + tiles::kChunk * lds * sizeof(S) +
           (1 + 3 * stages) * tiles::kChunk * sizeof(float);
  }
  static constexpr int stages = bytes(2) <= 227 * 1024 ? 2 : 1;
};

// kCausal: a.span_blocks == 0 (a compile-time switch: the D = 128 kernel is at the register limit).
template <typename S, typename O, typename A, int D, bool kCausal>
__global__ void __launch_bounds__(tiles::kThreads) key_major_backward_kernel(KeyMajorBackwardArgs<S, O, A> a) {
  using namespace tiles;
  using L = KeyMajorLayout<S, D>;
  constexpr int NTD = D / 8, KTD = D / 16, ld = L::ld, lds = L::lds, kStages = L::stages;
  // The causal kernel at D = 64 fits 168 registers (three blocks per multiprocessor) only in a compact
  // form: one copy of the probability loop, testing every pair, and exp2f. With exp2_ftz and an
  // untested copy for the blocks that need no test, ptxas takes 178–185 registers (two blocks), which
  // was 1.9–3.9 % slower at the D = 64 anchors; at D = 16, 32 and 128, and for PaTH's cross-span
  // pairs at D = 64 (two blocks either way), that form is faster (docs/cuda-attention-notes.md, v22).
  constexpr bool kCompact = D == 64 && kCausal;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  S* sk = reinterpret_cast<S*>(smem_raw);
  S* sv = sk + L::tile;
  S* sq = sv + L::tile;             // [stages][64, D]
  S* sdo = sq + kStages * L::tile;  // [stages][64, D]
  S* sds = sdo + kStages * L::tile;  // [64 keys, 64 queries] dSᵀ
  float* sgk = reinterpret_cast<float*>(sds + kChunk * lds);  // [64] key gates
  float* slse = sgk + kChunk;                                  // [stages][64] lse (natural log)
  float* sdelta = slse + kStages * kChunk;
  float* sgq = sdelta + kStages * kChunk;

  const int T = int(a.length), nblocks = (T + kChunk - 1) / kChunk;
  const int kb = int(blockIdx.x), k0 = kb * kChunk, w = warp_id();
  const int first = kCausal ? kb : (kb / a.span_blocks + 1) * a.span_blocks;
  const int64_t bh = blockIdx.y, base = bh * T;
  const int64_t qoff = bh * a.q_slice + (kCausal ? 0 : (kb / a.span_blocks) * a.q_span);
  const S* q = a.q + qoff * D;
  A* dq = a.dq + qoff * D;
  const S* dout = a.d_o + base * D;
  const float* gate = a.gate ? a.gate + base : nullptr;

  auto issue = [&](int qb) {
    const int st = qb % kStages, q0 = qb * kChunk;
    load_tile_async<S, kChunk, D>(sq + st * L::tile, q + int64_t(q0) * D, D, T - q0);
    load_tile_async<S, kChunk, D>(sdo + st * L::tile, dout + int64_t(q0) * D, D, T - q0);
    load_row_values_async(slse + st * kChunk, a.lse + base + q0, kChunk, T - q0);
    load_row_values_async(sdelta + st * kChunk, a.delta + base + q0, kChunk, T - q0);
    if (gate) load_row_values_async(sgq + st * kChunk, gate + q0, kChunk, T - q0);
  };
  load_tile_async<S, kChunk, D>(sk, a.k + (bh * a.k_slice + k0) * D, D, T - k0);
  load_tile_async<S, kChunk, D>(sv, a.v + (base + k0) * D, D, T - k0);
  if (gate) load_row_values_async(sgk, gate + k0, kChunk, T - k0);
  if (first < nblocks) issue(first);
  cp_async_commit();

  const float scale2 = a.scale * kLog2e, gate2 = a.gate_scale * kLog2e;
  float acc_dk[NTD][4], acc_dv[NTD][4], col_sum[2] = {0.f, 0.f};
  zero(acc_dk);
  zero(acc_dv);
  for (int qb = first; qb < nblocks; ++qb) {
    cp_async_wait<0>();
    __syncthreads();
    if constexpr (kStages == 2) {
      if (qb + 1 < nblocks) issue(qb + 1);
      cp_async_commit();
    }
    const int st = qb % kStages, q0 = qb * kChunk;
    const S* tq = sq + st * L::tile;
    const S* tdo = sdo + st * L::tile;
    // Sᵀ = K Qᵀ and dPᵀ = V dOᵀ for this warp's 16 keys × 64 queries.
    float p[8][4], ds[8][4];
    zero(p);
    zero(ds);
    mma_ss<BLayout::NK, false, 8, KTD>(p, sk + 16 * w * ld, ld, tq, ld);
    mma_ss<BLayout::NK, false, 8, KTD>(ds, sv + 16 * w * ld, ld, tdo, ld);
    // p ← P, ds ← dS; only blocks with pairs that do not count test each pair, except in the compact form.
    const QueryRows rows{slse + st * kChunk, sdelta + st * kChunk, sgq + st * kChunk};
    if (kCompact || q0 + kChunk > T || (kCausal ? qb == kb : k0 + kChunk > T))
      softmax_gradients<true, kCausal, kCompact>(p, ds, col_sum, rows, gate != nullptr, sgk, q0, k0, T, scale2,
                                             gate2);
    else
      softmax_gradients<false, kCausal, kCompact>(p, ds, col_sum, rows, gate != nullptr, sgk, q0, k0, T, scale2,
                                             gate2);
    mma_acc<BLayout::KN>(acc_dv, p, tdo, ld);
    mma_acc<BLayout::KN>(acc_dk, ds, tq, ld);
    store_acc(ds, sds + 16 * w * lds, lds);
    __syncthreads();
    // dQ rows 16w … 16w+15 of this query block: dS (from dSᵀ, transposed) · K.
    float acc_dq[NTD][4];
    zero(acc_dq);
    mma_ss<BLayout::KN, true, NTD, 4>(acc_dq, sds + 16 * w, lds, sk, ld);
    const int row0 = q0 + 16 * w;
    atomic_add_acc(acc_dq, dq + int64_t(row0) * D, D, T - row0, a.scale);
    if constexpr (kStages == 1) {
      __syncthreads();
      if (qb + 1 < nblocks) issue(qb + 1);
      cp_async_commit();
    }
  }
  cp_async_wait<0>();  // a key block that meets no query block still has its K, V copies in flight
  // Every output row of the slice is written (rows past T, when out_slice pads them, get zeros).
  const int row0 = k0 + 16 * w, valid = int(a.out_slice) - row0;
  const int64_t out = bh * a.out_slice + row0;
  store_acc(acc_dk, a.dk + out * D, D, valid, a.scale);
  store_acc(acc_dv, a.dv + out * D, D, valid);
  if (a.d_gate) {
    float dg[2] = {-a.gate_scale * quad_sum(col_sum[0]), -a.gate_scale * quad_sum(col_sum[1])};
    store_row_pair(a.d_gate + out, dg, valid);
  }
}

}  // namespace detail

// Queues the kernel: one block per key block and slice; the Hopper form for bf16 at D = 64 and 128
// where hopper_kernels() holds.
template <typename S, typename O, typename A>
void key_major_backward(const KeyMajorBackwardArgs<S, O, A>& a, int64_t head_dim, cudaStream_t stream) {
  const dim3 grid(unsigned((a.length + tiles::kChunk - 1) / tiles::kChunk), unsigned(a.batch_heads));
  with_head_dim(head_dim, [&]<int D>() {
    if constexpr (wgmma::kHasHopperForm<S, D>) {
      if (choose_hopper_form()) return detail::key_major_backward_hopper<O, A, D>(a, stream);
    }
    using L = detail::KeyMajorLayout<S, D>;
    auto kernel = a.span_blocks == 0 ? detail::key_major_backward_kernel<S, O, A, D, true>
                                     : detail::key_major_backward_kernel<S, O, A, D, false>;
    launch_kernel(kernel, grid, L::bytes(L::stages), stream, "key_major_backward_kernel", a);
  });
}

}  // namespace pathbench::cuda
