// The key-major softmax-attention backward kernel (FlashAttention-2 style) shared by causal softmax
// attention (softmax_kernels.cu) and PaTH's cross-span pass (path_backward.cu): one block per 64
// keys streams the query blocks that see them through a two-stage cp.async pipeline, recomputes
// P = exp(s·qᵀk + bias − lse) and dS = P ∘ (dP − δ), keeps dK and dV in registers and adds s·dS·K
// into an fp32 dQ accumulator with atomics. The FoX bias g·(c_i − c_j) only adds −g·Σ_i dS_ij to
// the key's gate gradient (the row sums of dS vanish: Σ_j P_ij (dP_ij − δ_i) = 0).
#pragma once
#include <type_traits>

#include "core/attention/cuda/online_softmax.cuh"
#include "core/attention/cuda/tiles.cuh"

namespace pathbench::cuda {

// Where the kernel reads and writes, per slice bh (of batch_heads) and key block kb. Token t of a
// slice is row t of every [.., D] tensor named here; `*_slice` are the row counts between slices.
// Causal (span_blocks = 0): key block kb meets query blocks kb … last, key ≤ query. Spans
// (span_blocks = s > 0): key block kb of span j = kb / s meets every query of the blocks after its
// span, whose queries for that span are q + j·q_span (PaTH: queries moved to span j's end).
template <typename S, typename O>
struct KeyMajorBackwardArgs {
  int64_t batch_heads = 0, length = 0;  // BH, T
  float scale = 0, gate_scale = 1;      // s, g
  int span_blocks = 0;
  const S* k = nullptr;  // [BH, k_slice, D]
  int64_t k_slice = 0;
  const S* q = nullptr;   // [BH, q_slice, D], span j at + j·q_span rows
  float* dq = nullptr;    // fp32, zeroed, same layout as q: receives s·dS·K
  int64_t q_slice = 0, q_span = 0;
  const S* v = nullptr;             // [BH, T, D]
  const S* d_o = nullptr;           // [BH, T, D]
  const float* lse = nullptr;       // [BH, T] natural log
  const float* delta = nullptr;     // [BH, T] rowsum(dO ∘ O)
  const float* gate = nullptr;      // [BH, T] cumulative log gates or null
  O* dk = nullptr;                  // [BH, out_slice, D] s·dSᵀ Q
  O* dv = nullptr;                  // [BH, out_slice, D] Pᵀ dO
  float* d_gate = nullptr;          // [BH, out_slice] −g·Σ_i dS_ij, or null
  int64_t out_slice = 0;            // ≥ T; rows past T are written as zeros
};

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
template <typename S, typename O, int D, bool kCausal>
__global__ void __launch_bounds__(tiles::kThreads) key_major_backward_kernel(KeyMajorBackwardArgs<S, O> a) {
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
  float* dq = a.dq + qoff * D;
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
    // p ← P, ds ← dS. kMasked: a block with pairs that do not count (the diagonal block, queries or
    // keys past T); the others need no test, except in the compact form (kCompact).
    auto probabilities = [&](auto masked) {
      constexpr bool kMasked = decltype(masked)::value;
#pragma unroll
      for (int n = 0; n < 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int il = acc_col(n, e), jl = 16 * w + acc_row(e);
          const bool visible = !kMasked || (q0 + il < T && (kCausal ? k0 + jl <= q0 + il : k0 + jl < T));
          float xv = p[n][e] * scale2 - slse[st * kChunk + il] * kLog2e;
          if (gate) xv += gate2 * (sgq[st * kChunk + il] - sgk[jl]);
          const float pv = visible ? (kCompact ? exp2f(xv) : exp2_ftz(xv)) : 0.f;
          p[n][e] = pv;
          ds[n][e] = pv * (ds[n][e] - sdelta[st * kChunk + il]);
          col_sum[e >> 1] += ds[n][e];
        }
    };
    if (kCompact || q0 + kChunk > T || (kCausal ? qb == kb : k0 + kChunk > T))
      probabilities(std::true_type{});
    else
      probabilities(std::false_type{});
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

// Queues the kernel: one block per key block and slice.
template <typename S, typename O>
void key_major_backward(const KeyMajorBackwardArgs<S, O>& a, int64_t head_dim, cudaStream_t stream) {
  const dim3 grid(unsigned((a.length + tiles::kChunk - 1) / tiles::kChunk), unsigned(a.batch_heads));
  with_head_dim(head_dim, [&]<int D>() {
    using L = detail::KeyMajorLayout<S, D>;
    auto kernel = a.span_blocks == 0 ? detail::key_major_backward_kernel<S, O, D, true>
                                     : detail::key_major_backward_kernel<S, O, D, false>;
    launch_kernel(kernel, grid, L::bytes(L::stages), stream, "key_major_backward_kernel", a);
  });
}

}  // namespace pathbench::cuda
