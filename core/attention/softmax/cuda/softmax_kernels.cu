// Causal softmax attention, CUDA (FlashAttention-2 style). Forward: one block per 64 query rows,
// keys streamed in blocks of 64 through a two-stage cp.async pipeline, online softmax in
// registers; the FoX bias adds g·(c_i − c_j) to logits. Its products run on mma.sync (the portable
// form) or, on Hopper for bf16 at D = 64 and 128, as warpgroup products (wgmma.cuh) that read K and V
// from shared memory once per block. Backward: the key-major kernel of key_major_backward.cuh over
// the whole causal slice.
#include "core/attention/cuda/key_major_backward.cuh"
#include "core/attention/cuda/online_softmax.cuh"
#include "core/attention/cuda/tiles.cuh"
#include "core/attention/cuda/wgmma.cuh"
#include "core/attention/softmax/cuda/softmax_kernels.h"
#include "core/cuda/hopper.h"

namespace pathbench::cuda {

namespace {

using namespace tiles;

template <typename S, int D>
struct SoftmaxLayout {
  static constexpr int ld = stride_of<S>(D);      // row stride of [64, D] tiles
  static constexpr int tile = tile_elems<S>(kChunk, D);
  // Q + 2 stages × (K, V) tiles, then 2 stages × 64 key gates.
  static constexpr size_t forward_bytes = 5 * tile * sizeof(S) + 2 * kChunk * sizeof(float);
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

  const QueryBlock blk(a.length);  // longest rows first
  const int T = blk.T, qb = blk.qb, q0 = blk.q0, w = warp_id();
  const int64_t base = blk.base;
  const S* q = a.q + base * D;
  const S* k = a.k + base * D;
  const S* v = a.v + base * D;
  const float* gate = a.cum_log_gate ? a.cum_log_gate + base : nullptr;

  auto issue = [&](int kb) {
    const int st = kb & 1, k0 = kb * kChunk;
    load_tile_async<S, kChunk, D>(sk + st * L::tile, k + int64_t(k0) * D, D, T - k0);
    load_tile_async<S, kChunk, D>(sv + st * L::tile, v + int64_t(k0) * D, D, T - k0);
    if (gate) load_row_values_async(sgate + st * kChunk, gate + k0, kChunk, T - k0);
  };
  load_tile_async<S, kChunk, D>(sq, q + int64_t(q0) * D, D, T - q0);
  issue(0);
  cp_async_commit();

  SoftmaxRows<NTD> rows(a.scale, a.gate_scale, gate, q0, T);
  for (int kb = 0; kb <= qb; ++kb) {
    cp_async_wait<0>();
    __syncthreads();
    if (kb < qb) issue(kb + 1);
    cp_async_commit();
    const int st = kb & 1;
    float x[8][4];
    zero(x);
    mma_ss<BLayout::NK, false, 8, KTD>(x, sq + 16 * w * ld, ld, sk + st * L::tile, ld);
    rows.weigh(x, kb == qb, gate ? sgate + st * kChunk : nullptr);
    mma_acc<BLayout::KN>(rows.o, x, sv + st * L::tile, ld);
  }
  rows.store(o + (base + blk.row0) * D, lse + base + blk.row0, D, T - blk.row0);
}

// The forward on Hopper (bf16, D = 64 or 128): the same loop, with S = Q Kᵀ (both K-major) and
// O += P V (P from registers, V N-major) as warpgroup products over swizzled tiles.
template <int D>
struct SoftmaxHopperLayout {
  // Q + 2 stages × (K, V) tiles, then 2 stages × 64 key gates, plus room to align the start.
  static constexpr size_t forward_bytes =
      wgmma::ForwardTiles<D>::bytes + 2 * kChunk * sizeof(float) + wgmma::kSwizzleBytes;
};

template <int D>
__global__ void __launch_bounds__(kThreads, 2)
    softmax_forward_hopper_kernel(SoftmaxAttentionCudaArgs<bf16> a, bf16* o, float* lse) {
#if PATHBENCH_SM90A_DEVICE
  constexpr int NTD = D / 8;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const wgmma::ForwardTiles<D> tile{wgmma::align_to_swizzle(smem_raw)};
  float* sgate = reinterpret_cast<float*>(tile.end());  // [2][64]

  const QueryBlock blk(a.length);  // longest rows first
  const int T = blk.T, qb = blk.qb, q0 = blk.q0;
  const int64_t base = blk.base;
  const bf16* k = a.k + base * D;
  const bf16* v = a.v + base * D;
  const float* gate = a.cum_log_gate ? a.cum_log_gate + base : nullptr;

  auto issue = [&](int kb) {
    const int st = kb & 1, k0 = kb * kChunk;
    wgmma::load_tile_async<kChunk, D>(tile.k(st), k + int64_t(k0) * D, D, T - k0);
    wgmma::load_tile_async<kChunk, D>(tile.v(st), v + int64_t(k0) * D, D, T - k0);
    if (gate) load_row_values_async(sgate + st * kChunk, gate + k0, kChunk, T - k0);
  };
  wgmma::load_tile_async<kChunk, D>(tile.q(), a.q + (base + q0) * D, D, T - q0);
  issue(0);
  cp_async_commit();

  SoftmaxRows<NTD> rows(a.scale, a.gate_scale, gate, q0, T);
  for (int kb = 0; kb <= qb; ++kb) {
    wgmma::next_stage(kb < qb, [&] { issue(kb + 1); });
    const int st = kb & 1;
    float x[8][4];
    wgmma::rows_by_rows<D>(x, tile.q(), tile.k(st));
    rows.weigh(x, kb == qb, gate ? sgate + st * kChunk : nullptr);
    wgmma::add_regs_by_tile<D>(rows.o, x, tile.v(st));
  }
  rows.store(o + (base + blk.row0) * D, lse + base + blk.row0, D, T - blk.row0);
#else
  __trap();  // launched only where hopper_kernels() holds
#endif
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
    if constexpr (wgmma::kHasHopperForm<S, D>) {
      if (choose_hopper_form())
        return launch_kernel(softmax_forward_hopper_kernel<D>, grid, SoftmaxHopperLayout<D>::forward_bytes, stream,
                             "softmax_forward_hopper_kernel", a, o, lse);
    }
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
  KeyMajorBackwardArgs<S, S> km;
  km.batch_heads = a.batch_heads, km.length = a.length, km.scale = a.scale, km.gate_scale = a.gate_scale;
  km.k = a.k, km.k_slice = a.length;
  km.q = a.q, km.dq = dq_acc, km.q_slice = a.length;
  km.v = a.v, km.d_o = d_o, km.lse = lse, km.delta = delta, km.gate = a.cum_log_gate;
  km.dk = dk, km.dv = dv, km.d_gate = a.cum_log_gate ? d_cum_log_gate : nullptr, km.out_slice = a.length;
  key_major_backward(km, a.head_dim, stream);
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
