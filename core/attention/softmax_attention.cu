// Causal softmax attention, CUDA (FlashAttention-2 style). Forward: one block per 64 query rows,
// keys streamed in blocks of 64 through a two-stage cp.async pipeline, online softmax in
// registers. Backward: one block per 64 keys streaming the query blocks after it; dK, dV stay in
// registers, dQ is accumulated with fp32 atomics. The FoX bias only adds g·(c_i − c_j) to logits;
// its gradient is −g·Σ_i dS_ij (the row sums of dS vanish: Σ_j P_ij (dP_ij − δ_i) = 0).
#include "core/attention/attention_softmax.cuh"
#include "core/attention/attention_tiles.cuh"
#include "core/attention/softmax_attention_cuda.h"

namespace pathbench::cuda {

namespace {

using namespace tiles;

template <typename S, int D>
struct SoftmaxLayout {
  static constexpr int ld = stride_of<S>(D);      // row stride of [64, D] tiles
  static constexpr int lds = stride_of<S>(kChunk);  // row stride of [64, 64] tiles
  static constexpr int tile = tile_elems<S>(kChunk, D);
  // Forward: Q + 2 stages × (K, V) tiles, then 2 stages × 64 key gates.
  static constexpr size_t forward_bytes = 5 * tile * sizeof(S) + 2 * kChunk * sizeof(float);
  // Backward: K, V, stages × (Q, dO), dSᵀ tile, then 64 key gates + stages × (lse, δ, query gates).
  static constexpr size_t backward_bytes(int stages) {
    return (2 + 2 * stages) * tile * sizeof(S) + kChunk * lds * sizeof(S) + (1 + 3 * stages) * kChunk * sizeof(float);
  }
  static constexpr int backward_stages = backward_bytes(2) <= 227 * 1024 ? 2 : 1;
};

template <typename S, int D>
__global__ void __launch_bounds__(kThreads) softmax_forward_kernel(SoftmaxAttentionCudaArgs<S> a, S* o, float* lse) {
  using L = SoftmaxLayout<S, D>;
  constexpr int NTD = D / 8, KTD = D / 16, ld = L::ld;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  S* sq = reinterpret_cast<S*>(smem_raw);
  S* sk = sq + L::tile;          // [2][64, D]
  S* sv = sk + 2 * L::tile;      // [2][64, D]
  float* sgate = reinterpret_cast<float*>(sv + 2 * L::tile);  // [2][64]

  const int T = int(a.length), nblocks = (T + kChunk - 1) / kChunk;
  const int qb = nblocks - 1 - int(blockIdx.x);  // longest rows first
  const int64_t base = int64_t(blockIdx.y) * T;
  const S* q = a.q + base * D;
  const S* k = a.k + base * D;
  const S* v = a.v + base * D;
  const float* gate = a.cum_log_gate ? a.cum_log_gate + base : nullptr;
  const int q0 = qb * kChunk, w = warp_id();

  auto issue = [&](int kb) {
    const int st = kb & 1, k0 = kb * kChunk;
    load_tile_async<S, kChunk, D>(sk + st * L::tile, k + int64_t(k0) * D, D, T - k0);
    load_tile_async<S, kChunk, D>(sv + st * L::tile, v + int64_t(k0) * D, D, T - k0);
    if (gate) load_row_values(sgate + st * kChunk, gate + k0, kChunk, T - k0, 0.f);
  };
  load_tile_async<S, kChunk, D>(sq, q + int64_t(q0) * D, D, T - q0);
  issue(0);
  cp_async_commit();

  const float scale2 = a.scale * kLog2e, gate2 = a.gate_scale * kLog2e;
  float row_gate[2] = {0.f, 0.f};
  for (int r = 0; r < 2; ++r) {
    const int i = q0 + 16 * w + acc_row(2 * r);
    if (gate && i < T) row_gate[r] = gate[i];
  }
  OnlineSoftmax sm;
  float acc_o[NTD][4];
  zero(acc_o);
  for (int kb = 0; kb <= qb; ++kb) {
    cp_async_wait<0>();
    __syncthreads();
    if (kb < qb) issue(kb + 1);
    cp_async_commit();
    const int st = kb & 1;
    float x[8][4];
    zero(x);
    mma_ss<BLayout::NK, false, 8, KTD>(x, sq + 16 * w * ld, ld, sk + st * L::tile, ld);
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int jl = acc_col(n, e), il = 16 * w + acc_row(e);
        float xv = x[n][e] * scale2;
        if (gate) xv += gate2 * (row_gate[e >> 1] - sgate[st * kChunk + jl]);
        x[n][e] = (kb == qb && jl > il) ? -INFINITY : xv;
      }
    sm.update(x, acc_o);
    mma_acc<BLayout::KN>(acc_o, x, sv + st * L::tile, ld);
  }
  float row_lse[2];
  sm.finish(acc_o, row_lse);
  const int row0 = q0 + 16 * w;
  store_acc(acc_o, o + (base + row0) * D, D, T - row0);
  store_row_pair(lse + base + row0, row_lse, T - row0);
}

// dq_acc: fp32 [BH, T, D], zeroed, receives s·dS·K.
template <typename S, int D>
__global__ void __launch_bounds__(kThreads)
    softmax_backward_kernel(SoftmaxAttentionCudaArgs<S> a, const S* d_o, const float* lse, const float* delta,
                            float* dq_acc, S* dk, S* dv, float* d_gate) {
  using L = SoftmaxLayout<S, D>;
  constexpr int NTD = D / 8, KTD = D / 16, ld = L::ld, lds = L::lds, kStages = L::backward_stages;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  S* sk = reinterpret_cast<S*>(smem_raw);
  S* sv = sk + L::tile;
  S* sq = sv + L::tile;                // [stages][64, D]
  S* sdo = sq + kStages * L::tile;     // [stages][64, D]
  S* sds = sdo + kStages * L::tile;    // [64 keys, 64 queries] dSᵀ
  float* sgk = reinterpret_cast<float*>(sds + kChunk * lds);  // [64] key gates
  float* slse = sgk + kChunk;          // [stages][64] lse in log2 units
  float* sdelta = slse + kStages * kChunk;
  float* sgq = sdelta + kStages * kChunk;

  const int T = int(a.length), nblocks = (T + kChunk - 1) / kChunk;
  const int kb = int(blockIdx.x), k0 = kb * kChunk, w = warp_id();
  const int64_t base = int64_t(blockIdx.y) * T;
  const S* q = a.q + base * D;
  const S* dout = d_o + base * D;
  const float* gate = a.cum_log_gate ? a.cum_log_gate + base : nullptr;

  auto issue = [&](int qb) {
    const int st = qb % kStages, q0 = qb * kChunk;
    load_tile_async<S, kChunk, D>(sq + st * L::tile, q + int64_t(q0) * D, D, T - q0);
    load_tile_async<S, kChunk, D>(sdo + st * L::tile, dout + int64_t(q0) * D, D, T - q0);
    for (int i = int(threadIdx.x); i < kChunk; i += kThreads) {
      const bool in = q0 + i < T;
      slse[st * kChunk + i] = in ? lse[base + q0 + i] * kLog2e : 0.f;
      sdelta[st * kChunk + i] = in ? delta[base + q0 + i] : 0.f;
      sgq[st * kChunk + i] = in && gate ? gate[q0 + i] : 0.f;
    }
  };
  load_tile_async<S, kChunk, D>(sk, a.k + (base + k0) * D, D, T - k0);
  load_tile_async<S, kChunk, D>(sv, a.v + (base + k0) * D, D, T - k0);
  load_row_values(sgk, gate ? gate + k0 : nullptr, kChunk, gate ? T - k0 : 0, 0.f);
  issue(kb);
  cp_async_commit();

  const float scale2 = a.scale * kLog2e, gate2 = a.gate_scale * kLog2e;
  float acc_dk[NTD][4], acc_dv[NTD][4], col_sum[2] = {0.f, 0.f};
  zero(acc_dk);
  zero(acc_dv);
  for (int qb = kb; qb < nblocks; ++qb) {
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
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int il = acc_col(n, e), jl = 16 * w + acc_row(e);
        const bool visible = q0 + il < T && k0 + jl <= q0 + il;
        float xv = p[n][e] * scale2 - slse[st * kChunk + il];
        if (gate) xv += gate2 * (sgq[st * kChunk + il] - sgk[jl]);
        const float pv = visible ? exp2f(xv) : 0.f;
        p[n][e] = pv;
        ds[n][e] = pv * (ds[n][e] - sdelta[st * kChunk + il]);
        col_sum[e >> 1] += ds[n][e];
      }
    mma_acc<BLayout::KN>(acc_dv, p, tdo, ld);
    mma_acc<BLayout::KN>(acc_dk, ds, tq, ld);
    store_acc(ds, sds + 16 * w * lds, lds);
    __syncthreads();
    // dQ rows 16w … 16w+15 of this query block: dS (from dSᵀ, transposed) · K.
    float acc_dq[NTD][4];
    zero(acc_dq);
    mma_ss<BLayout::KN, true, NTD, 4>(acc_dq, sds + 16 * w, lds, sk, ld);
    const int row0 = q0 + 16 * w;
    atomic_add_acc(acc_dq, dq_acc + (base + row0) * D, D, T - row0, a.scale);
    if constexpr (kStages == 1) {
      __syncthreads();
      if (qb + 1 < nblocks) issue(qb + 1);
      cp_async_commit();
    }
  }
  const int row0 = k0 + 16 * w;
  store_acc(acc_dk, dk + (base + row0) * D, D, T - row0, a.scale);
  store_acc(acc_dv, dv + (base + row0) * D, D, T - row0);
  if (d_gate) {
    float dg[2] = {-a.gate_scale * quad_sum(col_sum[0]), -a.gate_scale * quad_sum(col_sum[1])};
    store_row_pair(d_gate + base + row0, dg, T - row0);
  }
}

template <typename S>
int64_t dq_accumulator_elems(const SoftmaxAttentionCudaArgs<S>& a) {
  return std::is_same_v<S, float> ? 0 : a.batch_heads * a.length * a.head_dim;
}

}  // namespace

template <typename S>
void softmax_attention_forward(const SoftmaxAttentionCudaArgs<S>& a, S* o, float* lse, cudaStream_t stream) {
  check_attention_shape(a.batch_heads, a.length, a.head_dim, "softmax_attention_forward (cuda)");
  const dim3 grid(unsigned((a.length + kChunk - 1) / kChunk), unsigned(a.batch_heads));
  with_head_dim(a.head_dim, [&]<int D>() {
    launch_kernel(softmax_forward_kernel<S, D>, grid, SoftmaxLayout<S, D>::forward_bytes, stream,
                  "softmax_forward_kernel", a, o, lse);
  });
}

template <typename S>
size_t softmax_attention_backward_workspace_bytes(const SoftmaxAttentionCudaArgs<S>& a) {
  WorkspaceCarver c(nullptr);
  c.take<float>(a.batch_heads * a.length);
  c.take<float>(dq_accumulator_elems(a));
  return c.bytes();
}

template <typename S>
void softmax_attention_backward(const SoftmaxAttentionCudaArgs<S>& a, const S* o, const float* lse, const S* d_o,
                                S* dq, S* dk, S* dv, float* d_cum_log_gate, Workspace ws, cudaStream_t stream) {
  check_attention_shape(a.batch_heads, a.length, a.head_dim, "softmax_attention_backward (cuda)");
  check_workspace(ws, softmax_attention_backward_workspace_bytes(a), "softmax_attention_backward (cuda)");
  WorkspaceCarver c(ws.data);
  const int64_t rows = a.batch_heads * a.length, n = rows * a.head_dim;
  float* delta = c.take<float>(rows);
  float* dq_acc = dq_accumulator_elems(a) > 0 ? c.take<float>(n) : reinterpret_cast<float*>(dq);
  check_cuda(cudaMemsetAsync(dq_acc, 0, n * sizeof(float), stream), "softmax_attention_backward: zero dq");
  detail::row_dot(d_o, o, delta, rows, a.head_dim, stream);
  const dim3 grid(unsigned((a.length + kChunk - 1) / kChunk), unsigned(a.batch_heads));
  float* d_gate = a.cum_log_gate ? d_cum_log_gate : nullptr;
  with_head_dim(a.head_dim, [&]<int D>() {
    using L = SoftmaxLayout<S, D>;
    launch_kernel(softmax_backward_kernel<S, D>, grid, L::backward_bytes(L::backward_stages), stream,
                  "softmax_backward_kernel", a, d_o, lse, delta, dq_acc, dk, dv, d_gate);
  });
  if (dq_accumulator_elems(a) > 0) detail::convert_from_float(dq_acc, dq, n, stream);
}

#define PATHBENCH_INSTANTIATE(S)                                                                                 \
  template void softmax_attention_forward<S>(const SoftmaxAttentionCudaArgs<S>&, S*, float*, cudaStream_t);     \
  template size_t softmax_attention_backward_workspace_bytes<S>(const SoftmaxAttentionCudaArgs<S>&);            \
  template void softmax_attention_backward<S>(const SoftmaxAttentionCudaArgs<S>&, const S*, const float*, const S*, \
                                              S*, S*, S*, float*, Workspace, cudaStream_t);
PATHBENCH_INSTANTIATE(float)
PATHBENCH_INSTANTIATE(bf16)
#undef PATHBENCH_INSTANTIATE

}  // namespace pathbench::cuda
