// PaTH attention backward, CUDA (algorithm in path_kernels.h). After the prep and the span kernels of
// path_span.cu, the cross-span pairs (key_major_backward.cuh) and the in-span scan
// (path_span_scan.cuh, path_span_scan_hopper.cuh), the kernels here:
//   local a (path_local_a.cuh, path_local_a_hopper.cuh): per chunk, the chunk's own logits
//            (diagonal block) and the first layer of the UT backward (dq and dv final; dM, dY and
//            partial dk, dw to the workspace);
//   local b: per chunk, the triangular solves' backward (dβ; A⁻ᵀ dX as a product with the A⁻¹ the
//            prep kept) and the rest of dk, dw.
// Identities used (X = A⁻¹ diag β, A = I + diag(β) strict_lower(G), G = W Wᵀ):
//   dA = −A⁻ᵀ dX Xᵀ (strict lower part), dβ_i = (A⁻ᵀ dX)_ii + Σ_j dA_ij G_ij, dG = diag(β) dA.
#include "core/attention/cuda/online_softmax.cuh"
#include "core/attention/cuda/key_major_backward.cuh"
#include "core/attention/path/cuda/path_local_a.cuh"
#include "core/attention/path/cuda/path_local_a_hopper.cuh"
#include "core/attention/path/cuda/path_span_scan.cuh"
#include "core/attention/path/cuda/path_span_scan_hopper.cuh"
#include "core/attention/path/cuda/path_workspace.cuh"
#include "core/cuda/hopper.h"
#include "core/error.h"

#include <stdexcept>
#include <string>

namespace pathbench::cuda {

namespace {

using namespace tiles;

// ---- per-chunk backward, part b ------------------------------------------------------------------

// bf16: dG takes dM's staged copy, which is dead once dSL is formed. Every product with X or A⁻¹
// takes its two bf16 parts (path_forward.cu's prep says why), and dX is split the same way, so that
// Z = A⁻ᵀ dX (three products) keeps about 16 significant bits.
template <typename S, int D>
struct LocalBSmem {
  static constexpr int ld = stride_of<S>(D), lds = stride_of<S>(kChunk);
  S *w, *k, *xs, *xlo, *ainv, *ainvlo, *sl, *dm, *dy, *dsl, *dgm;
  S *dx, *dxlo;  // [64, 64] dX (bf16: dX_hi, dX_lo)
  float* beta;   // [64] β
  size_t bytes;
  __host__ __device__ explicit LocalBSmem(unsigned char* base) {
    SmemCarver c{base};
    w = c.take<S>(tile_elems<S>(kChunk, D));
    k = c.take<S>(tile_elems<S>(kChunk, D));
    xs = c.take<S>(staged_bytes<S>(kChunk, kChunk) / sizeof(S));
    xlo = c.take<S>(staged_bytes<S>(kChunk, kChunk) / sizeof(S));
    ainv = c.take<S>(staged_bytes<S>(kChunk, kChunk) / sizeof(S));
    ainvlo = c.take<S>(staged_bytes<S>(kChunk, kChunk) / sizeof(S));
    sl = c.take<S>(staged_bytes<S>(kChunk, kChunk) / sizeof(S));
    dm = c.take<S>(staged_bytes<S>(kChunk, kChunk) / sizeof(S));
    dy = c.take<S>(staged_bytes<S>(kChunk, D) / sizeof(S));
    dsl = c.take<S>(tile_elems<S>(kChunk, kChunk));
    dgm = kInPlace<S> ? c.take<S>(tile_elems<S>(kChunk, kChunk)) : dm;
    dx = c.take<S>(tile_elems<S>(kChunk, kChunk));
    dxlo = kInPlace<S> ? dx : c.take<S>(tile_elems<S>(kChunk, kChunk));  // fp32: dX whole, no low part
    beta = c.take<float>(kChunk);
    bytes = c.offset;
  }
};

template <typename S, int D>
__global__ void __launch_bounds__(kThreads)
    path_local_b_kernel(PathAttentionCudaArgs<S> a, PathWorkspace<S> ws, S* dk, S* dw, float* dbeta) {
  constexpr int NTD = D / 8, KTD = D / 16;
  using Sm = LocalBSmem<S, D>;
  constexpr int ld = Sm::ld, lds = Sm::lds;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const Sm sm(smem_raw);
  const int T = int(a.length), nch = int(ws.chunks), b = int(blockIdx.x), b0 = b * kChunk, valid = T - b0;
  const int r0 = 16 * warp_id();
  const int64_t bh = blockIdx.y, base = bh * T, prow = bh * ws.padded + b0;
  const int64_t cc = (bh * nch + b) * kChunk * kChunk;

  load_tile_async<S, kChunk, D>(sm.w, a.w + (base + b0) * D, D, valid);
  load_tile_async<S, kChunk, D>(sm.k, a.k + (base + b0) * D, D, valid);
  const TileRef<S> xs = workspace_tile<S, kChunk, kChunk>(sm.xs, ws.xs + cc);
  const TileRef<S> ainv = workspace_tile<S, kChunk, kChunk>(sm.ainv, ws.ainv + cc);
  TileRef<S> xlo{nullptr, 0}, ainvlo{nullptr, 0};  // bf16 only
  if constexpr (!kInPlace<S>) {
    xlo = workspace_tile<S, kChunk, kChunk>(sm.xlo, ws.xlo + cc);
    ainvlo = workspace_tile<S, kChunk, kChunk>(sm.ainvlo, ws.ainvlo + cc);
  }
  const TileRef<S> sl = workspace_tile<S, kChunk, kChunk>(sm.sl, ws.sl + cc);
  const TileRef<S> dm = workspace_tile<S, kChunk, kChunk>(sm.dm, ws.dm + cc);
  const TileRef<S> dy = workspace_tile<S, kChunk, D>(sm.dy, ws.dy + prow * D);
  cp_async_commit();
  load_row_values(sm.beta, a.beta + base + b0, kChunk, valid, 0.f);
  cp_async_wait<0>();
  __syncthreads();

  {  // dX = tril(dM SLᵀ + dY Wᵀ)
    float acc[8][4];
    zero(acc);
    mma_ss<BLayout::NK, false, 8, 4>(acc, dm.p + r0 * dm.ld, dm.ld, sl.p, sl.ld);
    mma_ss<BLayout::NK, false, 8, KTD>(acc, dy.p + r0 * dy.ld, dy.ld, sm.w, ld);
    mask_acc(acc, r0, [](int i, int j) { return j <= i; });
    store_acc_split(acc, sm.dx + r0 * lds, sm.dxlo + r0 * lds, lds);
  }
  float dsl[8][4];  // dSL = strict_lower(Xᵀ dM)
  zero(dsl);
  mma_ss<BLayout::KN, true, 8, 4>(dsl, xs.p + r0, xs.ld, dm.p, dm.ld);
  if constexpr (!kInPlace<S>) mma_ss<BLayout::KN, true, 8, 4>(dsl, xlo.p + r0, xlo.ld, dm.p, dm.ld);
  mask_acc(dsl, r0, [](int i, int j) { return j < i; });
  store_acc(dsl, sm.dsl + r0 * lds, lds);
  __syncthreads();
  // Z = A⁻ᵀ dX, this warp's rows. Rows past the sequence's end have β = 0, so A⁻¹'s rows and columns
  // there are those of I: they keep Z = dX and change no other row.
  float z[8][4];
  zero(z);
  mma_ss<BLayout::KN, true, 8, 4>(z, ainv.p + r0, ainv.ld, sm.dx, lds);
  if constexpr (!kInPlace<S>) {
    mma_ss<BLayout::KN, true, 8, 4>(z, ainv.p + r0, ainv.ld, sm.dxlo, lds);
    mma_ss<BLayout::KN, true, 8, 4>(z, ainvlo.p + r0, ainvlo.ld, sm.dx, lds);
  }
  float dga[8][4];  // dA = strict_lower(−Z Xᵀ), then dG = diag(β) dA
  zero(dga);
  mma_acc<BLayout::NK>(dga, z, xs.p, xs.ld);
  if constexpr (!kInPlace<S>) mma_acc<BLayout::NK>(dga, z, xlo.p, xlo.ld);
  mask_acc(dga, r0, [](int i, int j) { return j < i; });
  negate(dga);
  float gram[8][4];  // this warp's rows of G = W Wᵀ (the prep's product, recomputed)
  zero(gram);
  mma_ss<BLayout::NK, false, 8, KTD>(gram, sm.w + r0 * ld, ld, sm.w, ld);
  float db[2] = {0.f, 0.f};  // dβ_i = Z_ii + Σ_j dA_ij G_ij
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = r0 + acc_row(e);
      db[e >> 1] += dga[n][e] * gram[n][e] + (acc_col(n, e) == i ? z[n][e] : 0.f);
      dga[n][e] *= sm.beta[i];
    }
#pragma unroll
  for (int r = 0; r < 2; ++r) db[r] = quad_sum(db[r]);
  store_row_pair(dbeta + base + b0 + r0, db, valid - r0);
  store_acc(dga, sm.dgm + r0 * lds, lds);  // bf16: over dM, whose last reader came before the barrier
  __syncthreads();
  {  // dk = dk(part) + dSLᵀ W
    float acc[NTD][4];
    load_acc(acc, ws.dk_part + (prow + r0) * D, D);
    mma_ss<BLayout::KN, true, NTD, 4>(acc, sm.dsl + r0, lds, sm.w, ld);
    store_acc(acc, dk + (base + b0 + r0) * D, D, valid - r0);
  }
  {  // dw = dw(part) + dSL K + Xᵀ dY + dG W + dGᵀ W
    float acc[NTD][4];
    load_acc(acc, ws.dw_part + (prow + r0) * D, D);
    mma_acc<BLayout::KN>(acc, dsl, sm.k, ld);
    mma_ss<BLayout::KN, true, NTD, 4>(acc, xs.p + r0, xs.ld, dy.p, dy.ld);
    if constexpr (!kInPlace<S>) mma_ss<BLayout::KN, true, NTD, 4>(acc, xlo.p + r0, xlo.ld, dy.p, dy.ld);
    mma_acc<BLayout::KN>(acc, dga, sm.w, ld);
    mma_ss<BLayout::KN, true, NTD, 4>(acc, sm.dgm + r0, lds, sm.w, ld);
    store_acc(acc, dw + (base + b0 + r0) * D, D, valid - r0);
  }
}

// Resident blocks of the in-span scan's Hopper form (hopper true) or its portable one.
template <typename S, int D>
int span_scan_resident_blocks(bool hopper) {
  if constexpr (wgmma::kHasHopperForm<S, D>) {
    if (hopper)
      return resident_blocks(span_scan::path_span_scan_hopper_kernel<D>, kThreads,
                             span_scan::SpanScanHopperLayout<D>::bytes, "path_span_scan_hopper_kernel");
  }
  return resident_blocks(span_scan::path_span_scan_kernel<S, D>, kThreads,
                         span_scan::SpanScanSmem<S, D>(nullptr).bytes, "path_span_scan_kernel");
}

// Blocks of the in-span scan that the workspace keeps key states for: the larger of the two forms'
// resident blocks (so that either form runs on it), at most one per key chunk.
template <typename S>
int span_scan_blocks(const PathAttentionCudaArgs<S>& a) {
  int blocks = 0;
  with_head_dim(a.head_dim, [&]<int D>() {
    blocks = span_scan_resident_blocks<S, D>(false);
    if (hopper_kernels_available()) blocks = std::max(blocks, span_scan_resident_blocks<S, D>(true));
  });
  return int(std::min<int64_t>(a.batch_heads * ((a.length + kChunk - 1) / kChunk), blocks));
}

// Queues the in-span scan: the Hopper form for bf16 at D = 64 and 128 where hopper_kernels() holds,
// as many blocks as stay resident (and the workspace has key states for).
template <typename S>
void launch_span_scan(const PathAttentionCudaArgs<S>& a, const PathWorkspace<S>& w, const S* d_o, const float* lse,
                      cudaStream_t stream) {
  with_head_dim(a.head_dim, [&]<int D>() {
    if constexpr (wgmma::kHasHopperForm<S, D>) {
      if (choose_hopper_form()) {
        const unsigned blocks = unsigned(std::min(w.state_blocks, span_scan_resident_blocks<S, D>(true)));
        return launch_kernel(span_scan::path_span_scan_hopper_kernel<D>, dim3(blocks),
                             span_scan::SpanScanHopperLayout<D>::bytes, stream, "path_span_scan_hopper_kernel", a,
                             w, d_o, lse);
      }
    }
    const unsigned blocks = unsigned(std::min(w.state_blocks, span_scan_resident_blocks<S, D>(false)));
    launch_kernel(span_scan::path_span_scan_kernel<S, D>, dim3(blocks), span_scan::SpanScanSmem<S, D>(nullptr).bytes,
                  stream, "path_span_scan_kernel", a, w, d_o, lse);
  });
}

// Queues local a, one block per chunk: the Hopper form for bf16 at D = 64 and 128 where
// hopper_kernels() holds.
template <typename S>
void launch_local_a(const PathAttentionCudaArgs<S>& a, const PathWorkspace<S>& w, const S* d_o, const float* lse, S* dq,
                    S* dv, float* d_gate, cudaStream_t stream) {
  const dim3 chunks(unsigned(w.chunks), unsigned(a.batch_heads));
  with_head_dim(a.head_dim, [&]<int D>() {
    if constexpr (wgmma::kHasHopperForm<S, D>) {
      if (choose_hopper_form())
        return launch_kernel(local_a::path_local_a_hopper_kernel<D>, chunks, local_a::LocalAHopperLayout<D>::bytes,
                             stream, "path_local_a_hopper_kernel", a, w, d_o, lse, dq, dv, d_gate);
    }
    launch_kernel(local_a::path_local_a_kernel<S, D>, chunks, local_a::LocalASmem<S, D>(nullptr).bytes, stream,
                  "path_local_a_kernel", a, w, d_o, lse, dq, dv, d_gate);
  });
}

}  // namespace

template <typename S>
size_t path_attention_backward_workspace_bytes(const PathAttentionCudaArgs<S>& a) {
  check_attention_shape(a.batch_heads, a.length, a.head_dim, "path_attention_backward (cuda)");
  return PathWorkspace<S>(a).carve_backward(nullptr, a, span_scan_blocks(a));
}

template <typename S>
void path_attention_backward(const PathAttentionCudaArgs<S>& a, const S* o, const float* lse, Workspace forward_ws,
                             const S* d_o, S* dq, S* dk, S* dv, S* dw, float* dbeta, float* d_cum_log_gate,
                             Workspace ws, cudaStream_t stream) {
  const char* fn = "path_attention_backward (cuda)";
  check_path_args(a, fn);
  if (!a.for_backward) throw std::logic_error(std::string(fn) + ": its forward ran alone (for_backward false)");
  PathWorkspace<S> w(a);
  // Carving reads nothing, so the layouts are checked against the workspaces after they are laid out.
  check_workspace(forward_ws, w.carve_forward(forward_ws.data, a), std::string(fn) + " (the forward's workspace)");
  check_workspace(ws, w.carve_backward(ws.data, a, span_scan_blocks(a)), fn);
  const int64_t d = a.head_dim, rows = a.batch_heads * w.padded;
  detail::row_dot(d_o, o, w.delta, a.batch_heads * a.length, d, stream);
  check_cuda(cudaMemsetAsync(w.dqh, 0, rows * d * sizeof(float), stream), fn);
  check_cuda(cudaMemsetAsync(w.dpm, 0, a.batch_heads * w.chunks * d * d * sizeof(float), stream), fn);
  check_cuda(cudaMemsetAsync(w.dfspan, 0, a.batch_heads * w.spans * d * d * sizeof(float), stream), fn);
  launch_path_query_movers(a, w, stream);

  KeyMajorBackwardArgs<S, float> km;  // pairs across spans: Q⁽ʲ⁾ against K̄
  km.batch_heads = a.batch_heads, km.length = a.length, km.scale = a.scale, km.gate_scale = a.gate_scale;
  km.span_blocks = int(w.span_chunks);
  km.k = w.kbar, km.k_slice = w.padded;
  km.q = w.qspan, km.dq = w.dqspan, km.q_slice = w.spans * w.padded, km.q_span = w.padded;
  km.v = a.v, km.d_o = d_o, km.lse = lse, km.delta = w.delta, km.gate = a.cum_log_gate;
  km.dk = w.dkbar, km.dv = w.dvc, km.d_gate = a.cum_log_gate ? w.dcc : nullptr, km.out_slice = w.padded;
  key_major_backward(km, d, stream);

  const dim3 chunks(unsigned(w.chunks), unsigned(a.batch_heads));
  float* d_gate = a.cum_log_gate ? d_cum_log_gate : nullptr;
  launch_span_scan(a, w, d_o, lse, stream);
  launch_path_query_chain(a, w, stream);
  launch_path_span_gradients(a, w, stream);
  launch_local_a(a, w, d_o, lse, dq, dv, d_gate, stream);
  with_head_dim(d, [&]<int D>() {
    launch_kernel(path_local_b_kernel<S, D>, chunks, LocalBSmem<S, D>(nullptr).bytes, stream, "path_local_b_kernel", a,
                  w, dk, dw, dbeta);
  });
}

#define PATHBENCH_INSTANTIATE(S)                                                                              \
  template size_t path_attention_backward_workspace_bytes<S>(const PathAttentionCudaArgs<S>&);               \
  template void path_attention_backward<S>(const PathAttentionCudaArgs<S>&, const S*, const float*, Workspace,   \
                                           const S*, S*, S*, S*, S*, float*, float*, Workspace, cudaStream_t);
PATHBENCH_INSTANTIATE(float)
PATHBENCH_INSTANTIATE(bf16)
#undef PATHBENCH_INSTANTIATE

}  // namespace pathbench::cuda
