// PaTH backward, CUDA: the span kernels (algorithm in path_cuda.h). A span j of s chunks has the
// dense D×D transform F_j = P_last ⋯ P_first (P = I − Wᵀ Y, Y = X W): a query at the span's end
// crosses it as U F_j. Queries of later spans are materialized at the end of every earlier span
// (Q⁽ʲ⁾), keys at the end of their own span (K̄), so cross-span logits are Q⁽ʲ⁾ K̄ᵀ. Kernels:
//   span transforms:  F_j and the prefixes R_m = P_{m−1} ⋯ P_first, one block per span;
//   movers:           K̄ (in-span chunk moves) and Q⁽ʲ⁾ (in-span moves, then the F_j), per chunk;
//   query chain:      G⁽ʲ⁾ = dQ⁽ʲ⁾ + G⁽ʲ⁻¹⁾ F_jᵀ with dF_j += Q⁽ʲ⁾ᵀ G⁽ʲ⁻¹⁾, then back through the
//                     in-span moves (dP_m += V_{m+1}ᵀ G, G ← G P_mᵀ) into dQ̂ (persistent blocks
//                     keep the in-span query states V);
//   span gradients:   dP_m += A_m R_mᵀ with A_last = dF_j, A_{m−1} = P_mᵀ A_m, one block per span.
#include "core/attention/path_workspace.cuh"
#include "core/error.h"

namespace pathbench::cuda {

namespace {

using namespace tiles;

// Copies a D×D fp32 matrix (row stride ldf) to global memory in S (row stride D).
template <typename S, int D>
__device__ __forceinline__ void store_square(S* dst, const float* src, int ldf) {
  for (int i = int(threadIdx.x); i < D * D; i += kThreads) dst[i] = from_float<S>(src[(i / D) * ldf + i % D]);
}

// M ← M − Xᵀ B for a D×D matrix M kept in shared memory in fp32 (row stride ldf) and, for bf16, as
// a product operand beside it (row stride ld); X and B are [64, D] tiles (row stride ld). Each warp
// updates its share of M's 16-row tiles.
template <typename S, int D>
__device__ __forceinline__ void subtract_transposed_product(float* m, S* m_operand, const S* x, const S* b) {
  constexpr int NTD = D / 8, ld = stride_of<S>(D), ldf = stride_of<float>(D);
  for (int tile = warp_id(); tile < D / 16; tile += kWarps) {
    float acc[NTD][4], upd[NTD][4];
    load_acc(acc, m + 16 * tile * ldf, ldf);
    zero(upd);
    mma_ss<BLayout::KN, true, NTD, 4>(upd, x + 16 * tile, ld, b, ld);
#pragma unroll
    for (int n = 0; n < NTD; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[n][e] -= upd[n][e];
    store_acc(acc, m + 16 * tile * ldf, ldf);
    if constexpr (!kInPlace<S>) store_acc(acc, m_operand + 16 * tile * ld, ld);
  }
}

// ---- span transforms -------------------------------------------------------------------------------

template <typename S, int D>
struct TransformSmem {
  static constexpr int ld = stride_of<S>(D), ldf = stride_of<float>(D);
  float* r;  // [D, D] fp32 running product R
  S* rs;     // [D, D] R as a product operand (aliases r for fp32)
  S *w, *y, *t;  // [64, D] W_m, Y_m, Y_m R
  size_t bytes;
  __host__ __device__ explicit TransformSmem(unsigned char* base) {
    SmemCarver c{base};
    r = c.take<float>(tile_elems<float>(D, D));
    rs = kInPlace<S> ? reinterpret_cast<S*>(r) : c.take<S>(tile_elems<S>(D, D));
    w = c.take<S>(tile_elems<S>(kChunk, D));
    y = c.take<S>(tile_elems<S>(kChunk, D));
    t = c.take<S>(tile_elems<S>(kChunk, D));
    bytes = c.offset;
  }
};

template <typename S, int D>
__global__ void __launch_bounds__(kThreads) path_span_transforms_kernel(PathAttentionCudaArgs<S> a,
                                                                        PathWorkspace<S> ws) {
  constexpr int NTD = D / 8, KTD = D / 16;
  using Sm = TransformSmem<S, D>;
  constexpr int ld = Sm::ld, ldf = Sm::ldf, ldr = kInPlace<S> ? ldf : ld;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const Sm sm(smem_raw);
  const int T = int(a.length), j = int(blockIdx.x) + 1, wp = warp_id(), r0 = 16 * wp;
  const int first = j * int(ws.span_chunks), end = min(first + int(ws.span_chunks), int(ws.chunks));
  const int64_t bh = blockIdx.y, base = bh * T, pbase = bh * ws.padded;

  for (int i = int(threadIdx.x); i < D * D; i += kThreads) {
    const int row = i / D, col = i % D;
    sm.r[row * ldf + col] = row == col ? 1.f : 0.f;
    if constexpr (!kInPlace<S>) sm.rs[row * ld + col] = from_float<S>(row == col ? 1.f : 0.f);
  }
  for (int m = first; m < end; ++m) {
    const int m0 = m * kChunk;
    __syncthreads();  // R complete, the previous chunk's tiles no longer read
    load_tile_async<S, kChunk, D>(sm.w, a.w + (base + m0) * D, D, T - m0);
    load_tile_async<S, kChunk, D>(sm.y, ws.y + (pbase + m0) * D, D, kChunk);
    cp_async_commit();
    store_square<S, D>(ws.prefix + (bh * ws.chunks + m) * D * D, sm.r, ldf);
    cp_async_wait<0>();
    __syncthreads();
    {  // Y_m R, rows r0 …
      float acc[NTD][4];
      zero(acc);
      mma_ss<BLayout::KN, false, NTD, KTD>(acc, sm.y + r0 * ld, ld, sm.rs, ldr);
      store_acc(acc, sm.t + r0 * ld, ld);
    }
    __syncthreads();
    subtract_transposed_product<S, D>(sm.r, sm.rs, sm.w, sm.t);  // R ← P_m R = R − W_mᵀ (Y_m R)
  }
  __syncthreads();
  store_square<S, D>(ws.fspan + (bh * ws.spans + j) * D * D, sm.r, ldf);
}

// ---- movers --------------------------------------------------------------------------------------

template <typename S, int D>
struct MoverSmem {
  static constexpr int ld = stride_of<S>(D);
  S *w, *y;  // [64, D] one chunk's W and Y (queries) or Xᵀ W (keys)
  S* f;      // [D, D] F_j
  size_t bytes;
  __host__ __device__ explicit MoverSmem(unsigned char* base) {
    SmemCarver c{base};
    w = c.take<S>(tile_elems<S>(kChunk, D));
    y = c.take<S>(tile_elems<S>(kChunk, D));
    f = c.take<S>(tile_elems<S>(D, D));
    bytes = c.offset;
  }
};

// Moves the warp's rows u across chunk m: u (I − W_mᵀ B_m) with B = Y (queries) or Xᵀ W (keys).
template <typename S, int D, int NTD>
__device__ __forceinline__ void move_across(float (&u)[NTD][4], const MoverSmem<S, D>& sm,
                                            const PathAttentionCudaArgs<S>& a, const S* b_rows, int m,
                                            int64_t base, int64_t pbase) {
  constexpr int ld = MoverSmem<S, D>::ld;
  const int T = int(a.length), m0 = m * kChunk;
  load_tile_async<S, kChunk, D>(sm.w, a.w + (base + m0) * D, D, T - m0);
  load_tile_async<S, kChunk, D>(sm.y, b_rows + (pbase + m0) * D, D, kChunk);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  cross_chunk(u, sm.w, ld, sm.y, ld);
  __syncthreads();
}

template <typename S, int D>
__global__ void __launch_bounds__(kThreads) path_span_movers_kernel(PathAttentionCudaArgs<S> a, PathWorkspace<S> ws) {
  constexpr int NTD = D / 8;
  using Sm = MoverSmem<S, D>;
  constexpr int ld = Sm::ld;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const Sm sm(smem_raw);
  const int T = int(a.length), x = int(blockIdx.x), s = int(ws.span_chunks), r0 = 16 * warp_id();
  const int span = x / s, span_end = min((span + 1) * s, int(ws.chunks));
  const int64_t bh = blockIdx.y, base = bh * T, pbase = bh * ws.padded, row = pbase + x * kChunk + r0;

  float u[NTD][4];
  load_acc(u, ws.kh + row * D, D);  // key chunk x to its span's end
  for (int b = x + 1; b < span_end; ++b) move_across(u, sm, a, ws.yp, b, base, pbase);
  store_acc(u, ws.kbar + row * D, D);
  if (span == 0) return;

  float zeros[NTD][4];
  zero(zeros);
  load_acc(u, ws.qh + row * D, D);  // query chunk x to its span's start = span − 1's end
  for (int m = x - 1; m >= span * s; --m) move_across(u, sm, a, ws.y, m, base, pbase);
  for (int j = span - 1;; --j) {
    const int64_t at = (bh * ws.spans + j) * ws.padded + x * kChunk + r0;
    store_acc(u, ws.qspan + at * D, D);
    store_acc(zeros, ws.dqspan + at * D, D);
    if (j == 0) break;
    for (int i = int(threadIdx.x); i < D * D; i += kThreads)
      sm.f[(i / D) * ld + i % D] = ws.fspan[(bh * ws.spans + j) * D * D + i];
    __syncthreads();
    float moved[NTD][4];  // U F_j
    zero(moved);
    mma_acc<BLayout::KN>(moved, u, sm.f, ld);
#pragma unroll
    for (int n = 0; n < NTD; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) u[n][e] = moved[n][e];
    __syncthreads();
  }
}

// ---- query chain -----------------------------------------------------------------------------------

template <typename S, int D>
struct ChainSmem {
  static constexpr int ld = stride_of<S>(D);
  S *w, *y, *g, *q;  // [64, D] W_m, Y_m, the gradient G as an operand, Q⁽ʲ⁾ or a query state V
  S* f;              // [D, D] F_j
  size_t bytes;
  __host__ __device__ explicit ChainSmem(unsigned char* base) {
    SmemCarver c{base};
    w = c.take<S>(tile_elems<S>(kChunk, D));
    y = c.take<S>(tile_elems<S>(kChunk, D));
    g = c.take<S>(tile_elems<S>(kChunk, D));
    q = c.take<S>(tile_elems<S>(kChunk, D));
    f = c.take<S>(tile_elems<S>(D, D));
    bytes = c.offset;
  }
};

// dst (D×D fp32, row stride D) += Xᵀ G over the chunk's 64 rows (X = sm.q, G = sm.g), rows split
// over the warps, with atomics.
template <typename S, int D>
__device__ __forceinline__ void add_outer_product(float* dst, const ChainSmem<S, D>& sm) {
  constexpr int NTD = D / 8, ld = ChainSmem<S, D>::ld;
  for (int tile = warp_id(); tile < D / 16; tile += kWarps) {
    float acc[NTD][4];
    zero(acc);
    mma_ss<BLayout::KN, true, NTD, 4>(acc, sm.q + 16 * tile, ld, sm.g, ld);
    atomic_add_acc(acc, dst + 16 * tile * D, D);
  }
}

template <typename S, int D>
__global__ void __launch_bounds__(kThreads) path_query_chain_kernel(PathAttentionCudaArgs<S> a, PathWorkspace<S> ws) {
  constexpr int NTD = D / 8;
  using Sm = ChainSmem<S, D>;
  constexpr int ld = Sm::ld;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const Sm sm(smem_raw);
  const int T = int(a.length), s = int(ws.span_chunks), nch = int(ws.chunks), r0 = 16 * warp_id();
  const int64_t items = a.batch_heads * (nch - s);
  S* states = ws.qstates + int64_t(blockIdx.x) * s * kChunk * D;  // [s, 64, D]: V before crossing chunk first + i

  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int b = nch - 1 - int(item / a.batch_heads), span = b / s, first = span * s, b0 = b * kChunk;
    const int64_t bh = item % a.batch_heads, base = bh * T, pbase = bh * ws.padded;
    auto load_chunk = [&](int m) {
      load_tile_async<S, kChunk, D>(sm.w, a.w + (base + m * kChunk) * D, D, T - m * kChunk);
      load_tile_async<S, kChunk, D>(sm.y, ws.y + (pbase + m * kChunk) * D, D, kChunk);
    };
    // In-span query states: V_b = Q̂_b, V_m = V_{m+1} P_m; slot m − first keeps V_{m+1}.
    float u[NTD][4];
    load_acc(u, ws.qh + (pbase + b0 + r0) * D, D);
    for (int m = b - 1; m >= first; --m) {
      store_acc(u, states + ((m - first) * kChunk + r0) * D, D);
      __threadfence_block();
      load_chunk(m);
      cp_async_commit();
      cp_async_wait<0>();
      __syncthreads();
      cross_chunk(u, sm.w, ld, sm.y, ld);
      __syncthreads();
    }
    // Across the earlier spans: G⁽⁰⁾ = dQ⁽⁰⁾, G⁽ʲ⁾ = dQ⁽ʲ⁾ + G⁽ʲ⁻¹⁾ F_jᵀ, dF_j += Q⁽ʲ⁾ᵀ G⁽ʲ⁻¹⁾.
    auto span_rows = [&](int j) { return ((bh * ws.spans + j) * ws.padded + b0) * D; };
    float g[NTD][4];
    load_acc(g, ws.dqspan + span_rows(0) + r0 * D, D);
    for (int j = 1; j < span; ++j) {
      store_acc(g, sm.g + r0 * ld, ld);
      load_tile_async<S, kChunk, D>(sm.q, ws.qspan + span_rows(j), D, kChunk);
      cp_async_commit();
      for (int i = int(threadIdx.x); i < D * D; i += kThreads)
        sm.f[(i / D) * ld + i % D] = ws.fspan[(bh * ws.spans + j) * D * D + i];
      cp_async_wait<0>();
      __syncthreads();
      add_outer_product(ws.dfspan + (bh * ws.spans + j) * D * D, sm);
      float next[NTD][4];
      load_acc(next, ws.dqspan + span_rows(j) + r0 * D, D);
      mma_acc<BLayout::NK>(next, g, sm.f, ld);
#pragma unroll
      for (int n = 0; n < NTD; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) g[n][e] = next[n][e];
      __syncthreads();
    }
    // Back through the in-span moves: dP_m += V_{m+1}ᵀ G, G ← G P_mᵀ, for m = first … b−1.
    for (int m = first; m < b; ++m) {
      store_acc(g, sm.g + r0 * ld, ld);
      load_tile_async<S, kChunk, D>(sm.q, states + (m - first) * kChunk * D, D, kChunk);
      load_chunk(m);
      cp_async_commit();
      cp_async_wait<0>();
      __syncthreads();
      add_outer_product(ws.dpm + (bh * nch + m) * D * D, sm);
      cross_chunk(g, sm.y, ld, sm.w, ld);
      __syncthreads();
    }
    float dqh[NTD][4];  // dQ̂_b += G (the in-span pairs added theirs before)
    float* out = ws.dqh + (pbase + b0 + r0) * D;
    load_acc(dqh, out, D);
#pragma unroll
    for (int n = 0; n < NTD; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) dqh[n][e] += g[n][e];
    store_acc(dqh, out, D);
  }
}

// ---- span gradients ------------------------------------------------------------------------------

template <typename S, int D>
struct GradientSmem {
  static constexpr int ld = stride_of<S>(D), ldf = stride_of<float>(D);
  float* am;  // [D, D] fp32 A_m
  S* as;      // [D, D] A_m as a product operand (aliases am for fp32)
  S* r;       // [D, D] R_m (staged for bf16; fp32 reads it in place)
  S *w, *y, *t;  // [64, D] W_m, Y_m, W_m A_m
  size_t bytes;
  __host__ __device__ explicit GradientSmem(unsigned char* base) {
    SmemCarver c{base};
    am = c.take<float>(tile_elems<float>(D, D));
    as = kInPlace<S> ? reinterpret_cast<S*>(am) : c.take<S>(tile_elems<S>(D, D));
    r = c.take<S>(staged_bytes<S>(D, D) / sizeof(S));
    w = c.take<S>(tile_elems<S>(kChunk, D));
    y = c.take<S>(tile_elems<S>(kChunk, D));
    t = c.take<S>(tile_elems<S>(kChunk, D));
    bytes = c.offset;
  }
};

template <typename S, int D>
__global__ void __launch_bounds__(kThreads) path_span_gradients_kernel(PathAttentionCudaArgs<S> a,
                                                                       PathWorkspace<S> ws) {
  constexpr int NTD = D / 8, KTD = D / 16;
  using Sm = GradientSmem<S, D>;
  constexpr int ld = Sm::ld, ldf = Sm::ldf, lda = kInPlace<S> ? ldf : ld;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const Sm sm(smem_raw);
  const int T = int(a.length), j = int(blockIdx.x) + 1, wp = warp_id(), r0 = 16 * wp;
  const int first = j * int(ws.span_chunks), end = min(first + int(ws.span_chunks), int(ws.chunks));
  const int64_t bh = blockIdx.y, base = bh * T, pbase = bh * ws.padded;

  const float* df = ws.dfspan + (bh * ws.spans + j) * D * D;
  for (int i = int(threadIdx.x); i < D * D; i += kThreads) {
    sm.am[(i / D) * ldf + i % D] = df[i];
    if constexpr (!kInPlace<S>) sm.as[(i / D) * ld + i % D] = from_float<S>(df[i]);
  }
  for (int m = end - 1; m >= first; --m) {
    const int m0 = m * kChunk;
    const TileRef<S> r = workspace_tile<S, D, D>(sm.r, ws.prefix + (bh * ws.chunks + m) * D * D);
    load_tile_async<S, kChunk, D>(sm.y, ws.y + (pbase + m0) * D, D, kChunk);
    load_tile_async<S, kChunk, D>(sm.w, a.w + (base + m0) * D, D, T - m0);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    float* dpm = ws.dpm + (bh * ws.chunks + m) * D * D;
    for (int tile = wp; tile < D / 16; tile += kWarps) {  // dP_m += A_m R_mᵀ, rows 16·tile …
      float acc[NTD][4];
      load_acc(acc, dpm + 16 * tile * D, D);
      mma_ss<BLayout::NK, false, NTD, KTD>(acc, sm.as + 16 * tile * lda, lda, r.p, r.ld);
      store_acc(acc, dpm + 16 * tile * D, D);
    }
    if (m == first) break;
    {  // W_m A_m, rows r0 …
      float acc[NTD][4];
      zero(acc);
      mma_ss<BLayout::KN, false, NTD, KTD>(acc, sm.w + r0 * ld, ld, sm.as, lda);
      store_acc(acc, sm.t + r0 * ld, ld);
    }
    __syncthreads();
    subtract_transposed_product<S, D>(sm.am, sm.as, sm.y, sm.t);  // A_{m−1} = P_mᵀ A_m = A_m − Y_mᵀ (W_m A_m)
    __syncthreads();
  }
}

}  // namespace

template <typename S>
void launch_path_span_transforms(const PathAttentionCudaArgs<S>& a, const PathWorkspace<S>& ws, cudaStream_t stream) {
  const dim3 grid(unsigned(std::max<int64_t>(ws.spans - 2, 0)), unsigned(a.batch_heads));
  with_head_dim(a.head_dim, [&]<int D>() {
    launch_kernel(path_span_transforms_kernel<S, D>, grid, TransformSmem<S, D>(nullptr).bytes, stream,
                  "path_span_transforms_kernel", a, ws);
  });
}

template <typename S>
void launch_path_span_movers(const PathAttentionCudaArgs<S>& a, const PathWorkspace<S>& ws, cudaStream_t stream) {
  const dim3 grid(unsigned(ws.chunks), unsigned(a.batch_heads));
  with_head_dim(a.head_dim, [&]<int D>() {
    launch_kernel(path_span_movers_kernel<S, D>, grid, MoverSmem<S, D>(nullptr).bytes, stream,
                  "path_span_movers_kernel", a, ws);
  });
}

template <typename S>
int path_chain_blocks(const PathAttentionCudaArgs<S>& a) {
  const int64_t chunks = (a.length + kChunk - 1) / kChunk;
  const int64_t items = a.batch_heads * (chunks - PathWorkspace<S>::span_chunks_for(a, chunks));
  int blocks = 0;
  with_head_dim(a.head_dim, [&]<int D>() {
    blocks = resident_blocks(path_query_chain_kernel<S, D>, kThreads, ChainSmem<S, D>(nullptr).bytes,
                             "path_query_chain_kernel");
  });
  return int(std::min<int64_t>(items, blocks));
}

template <typename S>
void launch_path_query_chain(const PathAttentionCudaArgs<S>& a, const PathWorkspace<S>& ws, cudaStream_t stream) {
  with_head_dim(a.head_dim, [&]<int D>() {
    launch_kernel(path_query_chain_kernel<S, D>, dim3(unsigned(ws.chain_blocks)), ChainSmem<S, D>(nullptr).bytes,
                  stream, "path_query_chain_kernel", a, ws);
  });
}

template <typename S>
void launch_path_span_gradients(const PathAttentionCudaArgs<S>& a, const PathWorkspace<S>& ws, cudaStream_t stream) {
  const dim3 grid(unsigned(std::max<int64_t>(ws.spans - 2, 0)), unsigned(a.batch_heads));
  with_head_dim(a.head_dim, [&]<int D>() {
    launch_kernel(path_span_gradients_kernel<S, D>, grid, GradientSmem<S, D>(nullptr).bytes, stream,
                  "path_span_gradients_kernel", a, ws);
  });
}

#define PATHBENCH_INSTANTIATE(S)                                                                                    \
  template void launch_path_span_transforms<S>(const PathAttentionCudaArgs<S>&, const PathWorkspace<S>&,            \
                                               cudaStream_t);                                                       \
  template void launch_path_span_movers<S>(const PathAttentionCudaArgs<S>&, const PathWorkspace<S>&, cudaStream_t); \
  template int path_chain_blocks<S>(const PathAttentionCudaArgs<S>&);                                               \
  template void launch_path_query_chain<S>(const PathAttentionCudaArgs<S>&, const PathWorkspace<S>&, cudaStream_t); \
  template void launch_path_span_gradients<S>(const PathAttentionCudaArgs<S>&, const PathWorkspace<S>&, cudaStream_t);
PATHBENCH_INSTANTIATE(float)
PATHBENCH_INSTANTIATE(bf16)
#undef PATHBENCH_INSTANTIATE

}  // namespace pathbench::cuda
