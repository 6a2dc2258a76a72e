// Stick-breaking attention, CUDA. One block per 64 query rows. The forward scans key blocks from
// the diagonal leftwards; inside a block the softplus terms of the keys to the right of each key come
// from a suffix sum across the row (registers and quad shuffles), the keys of blocks already seen
// from a running carry; it keeps each row's whole softplus sum S_i for the backward, as a float pair
// (hi + lo, compensated summation). The backward is one pass from key 0 rightwards (math in
// sba_kernels.h):
//   g_ij = a_ij·(dO_i·v_j − r·dO_i·v_i),  dz_ij = g_ij·σ(−z_ij) − σ(z_ij)·Σ_{j'<j} g_ij',
// so the sum over earlier keys is a running carry plus a prefix sum inside the block, and a_ij's sum
// over later keys is the block's suffix sum plus what S_i leaves after the blocks seen so far
// (kept as a float pair, so the subtraction loses nothing that matters). r = 1 when the remainder
// goes to the current token. dq stays in registers; dk, dv are accumulated with atomics.
// Logits and softplus sums are kept in log₂ units (·log₂e), so each weight is one 2ˣ; only the
// diagonal block and the last block (rows past T) test which entries are visible.
#include <type_traits>

#include "core/attention/cuda/tiles.cuh"
#include "core/attention/sba/cuda/sba_kernels.h"

namespace pathbench::cuda {

namespace {

using namespace tiles;

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

// log₂σ(z), log₂(1 + 2ᵘ) = softplus(z)·log₂e and σ(z) for u = z·log₂e, from one 2ˣ and one
// log₂(1 + t). bf16 storage (kApprox) takes the hardware's approximate log₂ and reciprocal, whose
// errors (≈ 2⁻²² absolute) lie far below bf16's rounding; fp32 keeps the accurate log1p and division.
struct SigmoidTerms {
  float log_sigmoid, softplus, sigmoid;
};
template <bool kApprox>
__device__ __forceinline__ SigmoidTerms sigmoid_terms(float u) {
  const float t = exp2_ftz(-fabsf(u));
  const float l = kApprox ? log2_ftz(1.f + t) : log1pf(t) * kLog2e;
  const float r = kApprox ? rcp_ftz(1.f + t) : 1.f / (1.f + t);
  return {fminf(u, 0.f) - l, fmaxf(u, 0.f) + l, u >= 0.f ? r : t * r};
}

// The warp's 16 × 64 products q·k become log₂σ(z) in place (z = s·q·k, u = z·log₂e = q·k·scale2);
// sp ← log₂(1 + 2ᵘ), sig ← σ(z).
// kMasked (the diagonal block, or a block with rows past T): keys right of the query, and rows past
// T, get log₂σ = −∞ and sp = 0. Other blocks need no test.
template <bool kApprox, bool kMasked>
__device__ __forceinline__ void stick_terms(float (&z)[8][4], float (&sp)[8][4], float (&sig)[8][4], float scale2,
                                            int row0, int k0, int T) {
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const SigmoidTerms st = sigmoid_terms<kApprox>(z[n][e] * scale2);
      const int i = row0 + acc_row(e), j = k0 + acc_col(n, e);
      const bool visible = !kMasked || (j <= i && i < T);
      sp[n][e] = visible ? st.softplus : 0.f;
      z[n][e] = visible ? st.log_sigmoid : -INFINITY;
      sig[n][e] = st.sigmoid;
    }
}

// For each of the thread's two rows, an exclusive sum across the 64 columns of the block (the quad's
// threads hold columns 2t, 2t+1 of each 8-column tile): out = Σ of v over the columns to the right
// (kSuffix) or to the left; total = the row's sum.
template <bool kSuffix>
__device__ __forceinline__ void row_exclusive_sums(const float (&v)[8][4], float (&out)[8][4], float (&total)[2]) {
  const int t = lane_id() % 4, quad = lane_id() & ~3;
  constexpr int near = kSuffix ? 1 : 0;  // of the thread's two columns, the one nearer the sum's start
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float passed = 0.f;  // sum of the tiles already passed
#pragma unroll
    for (int step = 0; step < 8; ++step) {
      const int n = kSuffix ? 7 - step : step;
      const float pair = v[n][2 * r] + v[n][2 * r + 1];
      float x = pair, y = kSuffix ? __shfl_down_sync(kFullMask, x, 1) : __shfl_up_sync(kFullMask, x, 1);
      if (kSuffix ? t < 3 : t >= 1) x += y;
      y = kSuffix ? __shfl_down_sync(kFullMask, x, 2) : __shfl_up_sync(kFullMask, x, 2);
      if (kSuffix ? t < 2 : t >= 2) x += y;  // x = the pairs of this thread and those before it in the scan
      const float tile_total = __shfl_sync(kFullMask, x, kSuffix ? quad : quad + 3);
      const float outer = passed + x - pair;  // the quad's threads before this one and the tiles passed
      out[n][2 * r + near] = outer;
      out[n][2 * r + 1 - near] = outer + v[n][2 * r + near];
      passed += tile_total;
    }
    total[r] = passed;
  }
}

// hi + lo ← hi + lo + x with the rounding error of hi + x kept in lo (Knuth's two-sum).
__device__ __forceinline__ void add_compensated(float& hi, float& lo, float x) {
  const float s = __fadd_rn(hi, x), xs = __fsub_rn(s, hi);
  lo += __fadd_rn(__fsub_rn(hi, __fsub_rn(s, xs)), __fsub_rn(x, xs));
  hi = s;
}

template <typename S, int D>
__global__ void __launch_bounds__(kThreads) sba_forward_kernel(StickBreakingCudaArgs<S> a, S* o, float* totals_hi,
                                                                float* totals_lo) {
  using L = SbaLayout<S, D>;
  constexpr int NTD = D / 8, KTD = D / 16, ld = L::ld;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  S* sq = reinterpret_cast<S*>(smem_raw);
  S* sk = sq + L::tile;
  S* sv = sk + 2 * L::tile;

  const int T = int(a.length), nblocks = (T + kChunk - 1) / kChunk;
  const int qb = nblocks - 1 - int(blockIdx.x);
  const int64_t base = int64_t(blockIdx.y) * T;
  const S* k = a.k + base * D;
  const S* v = a.v + base * D;
  const int q0 = qb * kChunk, w = warp_id(), row0 = q0 + 16 * w;
  const bool masked_rows = q0 + kChunk > T;  // the last block: rows past T in every key block
  const float scale2 = a.scale * kLog2e;
  constexpr bool kApprox = !std::is_same_v<S, float>;

  auto issue = [&](int it) {
    const int st = it & 1, k0 = (qb - it) * kChunk;
    load_tile_async<S, kChunk, D>(sk + st * L::tile, k + int64_t(k0) * D, D, T - k0);
    load_tile_async<S, kChunk, D>(sv + st * L::tile, v + int64_t(k0) * D, D, T - k0);
  };
  load_tile_async<S, kChunk, D>(sq, a.q + (base + q0) * D, D, T - q0);
  issue(0);
  cp_async_commit();

  float carry[2] = {0.f, 0.f}, carry_lo[2] = {0.f, 0.f}, mass[2] = {0.f, 0.f};
  float acc_o[NTD][4];
  zero(acc_o);
  for (int it = 0; it <= qb; ++it) {
    cp_async_wait<0>();
    __syncthreads();
    if (it < qb) issue(it + 1);
    cp_async_commit();
    const int st = it & 1, k0 = (qb - it) * kChunk;
    float z[8][4], sp[8][4], unused[8][4], after[8][4], total[2];  // unused: σ (the backward's)
    zero(z);
    mma_ss<BLayout::NK, false, 8, KTD>(z, sq + 16 * w * ld, ld, sk + st * L::tile, ld);
    if (it == 0 || masked_rows)
      stick_terms<kApprox, true>(z, sp, unused, scale2, row0, k0, T);
    else
      stick_terms<kApprox, false>(z, sp, unused, scale2, row0, k0, T);
    row_exclusive_sums<true>(sp, after, total);
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float av = exp2_ftz(z[n][e] - after[n][e] - carry[e >> 1]);
        z[n][e] = av;
        mass[e >> 1] += av;
      }
    add_compensated(carry[0], carry_lo[0], total[0]);
    add_compensated(carry[1], carry_lo[1], total[1]);
    mma_acc<BLayout::KN>(acc_o, z, sv + st * L::tile, ld);
  }
  store_row_pair(totals_hi + base + row0, carry, T - row0);
  store_row_pair(totals_lo + base + row0, carry_lo, T - row0);
  if (a.remainder_to_current) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int i = row0 + acc_row(2 * r);
      const float rest = 1.f - quad_sum(mass[r]);
      if (i < T)
#pragma unroll
        for (int n = 0; n < NTD; ++n) {
          const float2 vi = load_pair(v + int64_t(i) * D + acc_col(n, 0));
          acc_o[n][2 * r] += rest * vi.x;
          acc_o[n][2 * r + 1] += rest * vi.y;
        }
    }
  }
  store_acc(acc_o, o + (base + row0) * D, D, T - row0);
}

// One pass over key blocks 0 … qb: dq in registers; dk, dv atomically into zeroed fp32 dk_acc, dv_acc.
template <typename S, int D>
__global__ void __launch_bounds__(kThreads) sba_backward_kernel(StickBreakingCudaArgs<S> a, const float* totals_hi,
                                                                 const float* totals_lo, const S* d_o, S* dq,
                                                                 float* dk_acc, float* dv_acc) {
  using L = SbaLayout<S, D>;
  constexpr int NTD = D / 8, KTD = D / 16, ld = L::ld, lds = L::lds, kStages = L::backward_stages;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  S* sq = reinterpret_cast<S*>(smem_raw);
  S* sdo = sq + L::tile;
  S* sk = sdo + L::tile;             // [stages][64, D]
  S* sv = sk + kStages * L::tile;    // [stages][64, D]
  S* sa = sv + kStages * L::tile;    // [64 queries, 64 keys] weights a
  S* sdz = sa + kChunk * lds;        // [64 queries, 64 keys] dz

  const int T = int(a.length), nblocks = (T + kChunk - 1) / kChunk;
  const int qb = nblocks - 1 - int(blockIdx.x);
  const int64_t base = int64_t(blockIdx.y) * T;
  const S* k = a.k + base * D;
  const S* v = a.v + base * D;
  const int q0 = qb * kChunk, w = warp_id(), row0 = q0 + 16 * w;
  const float rem = a.remainder_to_current ? 1.f : 0.f;
  const bool masked_rows = q0 + kChunk > T;  // the last block: rows past T in every key block
  const float scale2 = a.scale * kLog2e;
  constexpr bool kApprox = !std::is_same_v<S, float>;

  auto issue = [&](int it) {
    const int st = it % kStages, k0 = it * kChunk;
    load_tile_async<S, kChunk, D>(sk + st * L::tile, k + int64_t(k0) * D, D, T - k0);
    load_tile_async<S, kChunk, D>(sv + st * L::tile, v + int64_t(k0) * D, D, T - k0);
  };
  load_tile_async<S, kChunk, D>(sq, a.q + (base + q0) * D, D, T - q0);
  load_tile_async<S, kChunk, D>(sdo, d_o + (base + q0) * D, D, T - q0);
  issue(0);
  cp_async_commit();

  // Per row: dO_i·v_i (each thread of the quad taking every 4th column) and the softplus sum of the
  // keys not yet scanned, S_i at the start (a float pair).
  float do_v[2], later[2] = {0.f, 0.f}, later_lo[2] = {0.f, 0.f};
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = row0 + acc_row(2 * r);
    float gv = 0.f;
    if (i < T) {
      for (int c = lane_id() % 4; c < D; c += 4)
        gv += to_float(d_o[(base + i) * D + c]) * to_float(v[int64_t(i) * D + c]);
      later[r] = totals_hi[base + i];
      later_lo[r] = totals_lo[base + i];
    }
    do_v[r] = quad_sum(gv);
  }

  float g_carry[2] = {0.f, 0.f}, mass[2] = {0.f, 0.f};  // Σ g and Σ a over the keys scanned
  float acc_dq[NTD][4];
  zero(acc_dq);
  for (int it = 0; it <= qb; ++it) {
    cp_async_wait<0>();
    __syncthreads();
    if constexpr (kStages == 2) {
      if (it < qb) issue(it + 1);
      cp_async_commit();
    }
    const int st = it % kStages, k0 = it * kChunk;
    const S* tk = sk + st * L::tile;
    float z[8][4], dpv[8][4], sp[8][4], sig[8][4], after[8][4], total[2];
    zero(z);
    zero(dpv);
    mma_ss<BLayout::NK, false, 8, KTD>(z, sq + 16 * w * ld, ld, tk, ld);
    mma_ss<BLayout::NK, false, 8, KTD>(dpv, sdo + 16 * w * ld, ld, sv + st * L::tile, ld);
    // z ← a, dpv ← g, sp ← dz; kMasked: the diagonal block, or rows past T.
    auto weights_and_gradients = [&](auto masked) {
      constexpr bool kMasked = decltype(masked)::value;
      stick_terms<kApprox, kMasked>(z, sp, sig, scale2, row0, k0, T);
      row_exclusive_sums<true>(sp, after, total);
      // later ← the softplus sum of the blocks right of this one.
      float right[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        add_compensated(later[r], later_lo[r], -total[r]);
        right[r] = later[r] + later_lo[r];
      }
#pragma unroll
      for (int n = 0; n < 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float av = exp2_ftz(z[n][e] - after[n][e] - right[e >> 1]);
          z[n][e] = av;
          mass[e >> 1] += av;
          dpv[n][e] = av * (dpv[n][e] - rem * do_v[e >> 1]);
        }
      row_exclusive_sums<false>(dpv, after, total);
#pragma unroll
      for (int n = 0; n < 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int i = row0 + acc_row(e), j = k0 + acc_col(n, e);
          const float before = g_carry[e >> 1] + after[n][e];
          const bool visible = !kMasked || (j <= i && i < T);
          sp[n][e] = visible ? dpv[n][e] * (1.f - sig[n][e]) - sig[n][e] * before : 0.f;
        }
    };
    if (it == qb || masked_rows)
      weights_and_gradients(std::true_type{});
    else
      weights_and_gradients(std::false_type{});
    g_carry[0] += total[0];
    g_carry[1] += total[1];
    mma_acc<BLayout::KN>(acc_dq, sp, tk, ld);
    store_acc(z, sa + 16 * w * lds, lds);
    store_acc(sp, sdz + 16 * w * lds, lds);
    __syncthreads();
    // dK and dV rows of keys k0+16w … k0+16w+15: dzᵀ·Q and aᵀ·dO.
    const int key0 = k0 + 16 * w;
    {
      float acc[NTD][4];
      zero(acc);
      mma_ss<BLayout::KN, true, NTD, 4>(acc, sdz + 16 * w, lds, sq, ld);
      atomic_add_acc(acc, dk_acc + (base + key0) * D, D, T - key0, a.scale);
    }
    {
      float acc[NTD][4];
      zero(acc);
      mma_ss<BLayout::KN, true, NTD, 4>(acc, sa + 16 * w, lds, sdo, ld);
      atomic_add_acc(acc, dv_acc + (base + key0) * D, D, T - key0);
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
#pragma unroll
    for (int n = 0; n < NTD; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[n][e] *= 1.f - quad_sum(mass[e >> 1]);
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

// The saved row sums S_i: hi at [0, BH·T), lo at [BH·T, 2·BH·T).
template <typename S>
int64_t saved_rows(const StickBreakingCudaArgs<S>& a) {
  return a.batch_heads * a.length;
}

}  // namespace

template <typename S>
size_t stick_breaking_saved_bytes(const StickBreakingCudaArgs<S>& a) {
  return size_t(2 * saved_rows(a)) * sizeof(float);
}

template <typename S>
void stick_breaking_forward(const StickBreakingCudaArgs<S>& a, S* o, Workspace saved, cudaStream_t stream) {
  check_attention_shape(a.batch_heads, a.length, a.head_dim, "stick_breaking_forward (cuda)");
  check_workspace(saved, stick_breaking_saved_bytes(a), "stick_breaking_forward (cuda) saved row sums");
  float* totals = static_cast<float*>(saved.data);
  const dim3 grid(unsigned((a.length + kChunk - 1) / kChunk), unsigned(a.batch_heads));
  with_head_dim(a.head_dim, [&]<int D>() {
    launch_kernel(sba_forward_kernel<S, D>, grid, SbaLayout<S, D>::forward_bytes, stream, "sba_forward_kernel", a, o,
                  totals, totals + saved_rows(a));
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
  const float* totals = static_cast<const float*>(saved.data);
  float* dk_acc = staged ? w.dk_acc : reinterpret_cast<float*>(dk);
  float* dv_acc = staged ? w.dv_acc : reinterpret_cast<float*>(dv);
  check_cuda(cudaMemsetAsync(dk_acc, 0, n * sizeof(float), stream), "stick_breaking_backward: zero dk");
  check_cuda(cudaMemsetAsync(dv_acc, 0, n * sizeof(float), stream), "stick_breaking_backward: zero dv");
  const dim3 grid(unsigned((a.length + kChunk - 1) / kChunk), unsigned(a.batch_heads));
  with_head_dim(a.head_dim, [&]<int D>() {
    using L = SbaLayout<S, D>;
    launch_kernel(sba_backward_kernel<S, D>, grid, L::backward_bytes(L::backward_stages), stream,
                  "sba_backward_kernel", a, totals, totals + saved_rows(a), d_o, dq, dk_acc, dv_acc);
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
