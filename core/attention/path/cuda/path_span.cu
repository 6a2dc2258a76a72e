// PaTH, CUDA: the span kernels (algorithm in path_kernels.h). A span j of s chunks has the
// dense D×D transform F_j = P_last ⋯ P_first (P = I − Wᵀ Y, Y = X W) and prefixes R_m = P_{m−1} ⋯
// P_first: a query at the span's end crosses it as U F_j, and chunk m's queries Q̂_m reach the span's
// start as Q̂_m R_m. Queries of later spans are materialized at the end of every earlier span
// (Q⁽ʲ⁾), keys at the end of their own span (K̄), so cross-span logits are Q⁽ʲ⁾ K̄ᵀ. Kernels:
//   span transforms:  F_j and the prefixes R_m (R_m for the backward only), one block per span after
//                     the first;
//   key movers:       K̄ (in-span chunk moves), per chunk;
//   query movers:     Q⁽ʲ⁾ (Q̂ R_m, then the F_j), per chunk after span 0 (forward, for the backward),
//                     where the forward's Hopper cross-span pass does not (it moves its query tile
//                     itself, path_cross_span_hopper.cuh);
//   query chain:      G⁽ʲ⁾ = dQ⁽ʲ⁾ + G⁽ʲ⁻¹⁾ F_jᵀ with dF_j += Q⁽ʲ⁾ᵀ G⁽ʲ⁻¹⁾, per pair of query chunks; the
//                     gradient G at the chunk's span start goes to dQ̂ += G Rᵀ and is kept for dR;
//   span gradients:   with A the gradient of R_{m+1} (A = dF_j at the span's end): dP_m += A R_mᵀ,
//                     then A ← P_mᵀ A + Q̂_mᵀ G_m, one block per span after the first.
// All but the query chain and the query movers have Hopper forms (path_span_hopper.cuh).
#include "core/attention/cuda/block_pairs.h"
#include "core/attention/path/cuda/path_span_hopper.cuh"
#include "core/attention/path/cuda/path_workspace.cuh"
#include "core/cuda/hopper.h"
#include "core/error.h"

namespace pathbench::cuda {

namespace {

using namespace tiles;

// Copies a D×D fp32 matrix (row stride ldf) to global memory in S (row stride D).
template <typename S, int D>
__device__ __forceinline__ void store_square(S* dst, const float* src, int ldf) {
  for (int i = int(threadIdx.x); i < D * D; i += kThreads) dst[i] = from_float<S>(src[(i / D) * ldf + i % D]);
}

// A D×D fp32 matrix kept in shared memory (row stride ldf) with, for bf16, its copy as a product
// operand beside it (row stride ld); fp32 reads the matrix itself as the operand. WARPS: the
// block's warps, which share its updates.
template <typename S, int D, int WARPS = kWarps>
struct SquareTile {
  static constexpr int ld = stride_of<S>(D), ldf = stride_of<float>(D), ld_operand = kInPlace<S> ? ldf : ld;
  float* m = nullptr;
  S* operand = nullptr;
  __host__ __device__ void carve(SmemCarver& c) {
    m = c.take<float>(tile_elems<float>(D, D));
    operand = kInPlace<S> ? reinterpret_cast<S*>(m) : c.take<S>(tile_elems<S>(D, D));
  }
  // Sets element (i, j) to value(i, j) in both copies (the whole block; a barrier must follow).
  template <typename Value>
  __device__ void fill(Value value) const {
    for (int i = int(threadIdx.x); i < D * D; i += 32 * WARPS) {
      const int row = i / D, col = i % D;
      const float x = value(row, col);
      m[row * ldf + col] = x;
      if constexpr (!kInPlace<S>) operand[row * ld + col] = from_float<S>(x);
    }
  }
  // M ← M + sign·Xᵀ B for [64, D] tiles X and B; each warp updates its share of M's 16-row tiles.
  __device__ void add_transposed_product(TileRef<S> x, TileRef<S> b, float sign) const {
    constexpr int NTD = D / 8;
    for (int tile = warp_id(); tile < D / 16; tile += WARPS) {
      float acc[NTD][4], upd[NTD][4];
      load_acc(acc, m + 16 * tile * ldf, ldf);
      zero(upd);
      mma_ss<BLayout::KN, true, NTD, 4>(upd, x.p + 16 * tile, x.ld, b.p, b.ld);
#pragma unroll
      for (int n = 0; n < NTD; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[n][e] += sign * upd[n][e];
      store_acc(acc, m + 16 * tile * ldf, ldf);
      if constexpr (!kInPlace<S>) store_acc(acc, operand + 16 * tile * ld, ld);
    }
  }
};

// ---- span transforms -------------------------------------------------------------------------------

template <typename S, int D>
struct TransformSmem {
  static constexpr int ld = stride_of<S>(D);
  SquareTile<S, D> r;  // the running product R
  S *w, *y, *t;        // [64, D] W_m, Y_m, Y_m R
  size_t bytes;
  __host__ __device__ explicit TransformSmem(unsigned char* base) {
    SmemCarver c{base};
    r.carve(c);
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
  constexpr int ld = Sm::ld;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const Sm sm(smem_raw);
  const SpanBlock sp(a, ws);
  const int T = int(a.length), r0 = 16 * warp_id();

  sm.r.fill([](int row, int col) { return row == col ? 1.f : 0.f; });
  for (int m = sp.first; m < sp.end; ++m) {
    const int m0 = m * kChunk;
    __syncthreads();  // R complete, the previous chunk's tiles no longer read
    load_tile_async<S, kChunk, D>(sm.w, a.w + (sp.base + m0) * D, D, T - m0);
    load_tile_async<S, kChunk, D>(sm.y, ws.y + (sp.pbase + m0) * D, D, kChunk);
    cp_async_commit();
    if (ws.for_backward) store_square<S, D>(ws.prefix + (sp.bh * ws.chunks + m) * D * D, sm.r.m, sm.r.ldf);
    cp_async_wait<0>();
    __syncthreads();
    {  // Y_m R, rows r0 …
      float acc[NTD][4];
      zero(acc);
      mma_ss<BLayout::KN, false, NTD, KTD>(acc, sm.y + r0 * ld, ld, sm.r.operand, sm.r.ld_operand);
      store_acc(acc, sm.t + r0 * ld, ld);
    }
    __syncthreads();
    sm.r.add_transposed_product({sm.w, ld}, {sm.t, ld}, -1.f);  // R ← P_m R = R − W_mᵀ (Y_m R)
  }
  __syncthreads();
  store_square<S, D>(ws.fspan + (sp.bh * ws.spans + sp.j) * D * D, sm.r.m, sm.r.ldf);
}

// ---- movers --------------------------------------------------------------------------------------

template <typename S, int D>
struct KeyMoverSmem {
  static constexpr int ld = stride_of<S>(D);
  S *w, *y;  // [64, D] one chunk's W and Xᵀ W
  size_t bytes;
  __host__ __device__ explicit KeyMoverSmem(unsigned char* base) {
    SmemCarver c{base};
    w = c.take<S>(tile_elems<S>(kChunk, D));
    y = c.take<S>(tile_elems<S>(kChunk, D));
    bytes = c.offset;
  }
};

template <typename S, int D>
struct QueryMoverSmem {
  static constexpr int ld = stride_of<S>(D);
  S* f;  // [D, D] R_x or F_j
  size_t bytes;
  __host__ __device__ explicit QueryMoverSmem(unsigned char* base) {
    SmemCarver c{base};
    f = c.take<S>(tile_elems<S>(D, D));
    bytes = c.offset;
  }
};

// Moves the warp's key rows u rightwards across chunk m: u (I − W_mᵀ Y'_m), Y' = Xᵀ W.
template <typename S, int D, int NTD>
__device__ __forceinline__ void move_across(float (&u)[NTD][4], const KeyMoverSmem<S, D>& sm,
                                            const PathAttentionCudaArgs<S>& a, const PathWorkspace<S>& ws, int m,
                                            int64_t base, int64_t pbase) {
  constexpr int ld = KeyMoverSmem<S, D>::ld;
  const int T = int(a.length), m0 = m * kChunk;
  load_tile_async<S, kChunk, D>(sm.w, a.w + (base + m0) * D, D, T - m0);
  load_tile_async<S, kChunk, D>(sm.y, ws.yp + (pbase + m0) * D, D, kChunk);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  cross_chunk(u, sm.w, ld, sm.y, ld);
  __syncthreads();
}

// Key chunk x (blockIdx.x) to its span's end: K̄.
template <typename S, int D>
__global__ void __launch_bounds__(kThreads) path_key_movers_kernel(PathAttentionCudaArgs<S> a, PathWorkspace<S> ws) {
  constexpr int NTD = D / 8;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const KeyMoverSmem<S, D> sm(smem_raw);
  const int x = int(blockIdx.x), s = int(ws.span_chunks), r0 = 16 * warp_id();
  const int span_end = min((x / s + 1) * s, int(ws.chunks));
  const int64_t bh = blockIdx.y, base = bh * a.length, pbase = bh * ws.padded, row = pbase + x * kChunk + r0;

  float u[NTD][4];
  load_acc(u, ws.kh + row * D, D);
  for (int b = x + 1; b < span_end; ++b) move_across(u, sm, a, ws, b, base, pbase);
  store_acc(u, ws.kbar + row * D, D);
}

// Query chunk x = s + blockIdx.x (after span 0) to the end of every earlier span: Q⁽ʲ⁾.
template <typename S, int D>
__global__ void __launch_bounds__(kThreads) path_query_movers_kernel(PathAttentionCudaArgs<S> a, PathWorkspace<S> ws) {
  constexpr int NTD = D / 8;
  using Sm = QueryMoverSmem<S, D>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const Sm sm(smem_raw);
  const int s = int(ws.span_chunks), x = s + int(blockIdx.x), span = x / s, r0 = 16 * warp_id();
  const int64_t bh = blockIdx.y, row = bh * ws.padded + x * kChunk + r0;

  float u[NTD][4];
  auto multiply_by = [&](const S* matrix) {  // u ← u M for a D×D matrix M of the workspace
    load_tile_async<S, D, D>(sm.f, matrix, D, D);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    multiply_square(u, sm.f, Sm::ld);
    __syncthreads();
  };
  load_acc(u, ws.qh + row * D, D);  // to its span's start = span − 1's end: Q̂ R_x
  if (x > span * s) multiply_by(ws.prefix + (bh * ws.chunks + x) * D * D);
  for (int j = span - 1;; --j) {
    store_acc(u, ws.qspan + ((bh * ws.spans + j) * ws.padded + x * kChunk + r0) * D, D);
    if (j == 0) break;
    multiply_by(ws.fspan + (bh * ws.spans + j) * D * D);
  }
}

// ---- query chain -----------------------------------------------------------------------------------
// Blocks of two warpgroups, warpgroup w walking query chunk first + w of a pair inside one span
// (block_pairs.h): both meet the same span transforms F_j, so one copy of F_j serves both and each
// step's dF_j term is one product over the pair's 128 rows — half the atomics and F_j copies of one
// block a chunk (docs/cuda-attention-notes.md v48). A warpgroup without a chunk of its own (an odd
// span's last pair) keeps G = 0, which adds nothing to dF_j, and stores nothing.

constexpr int kChainThreads = 2 * kThreads;

template <typename S, int D>
struct ChainSmem {
  static constexpr int ld = stride_of<S>(D);
  S *g, *q;  // [128, D] the pair's gradient G as an operand, its Q⁽ʲ⁾ (at the end: warpgroup 1's R_b)
  S* f;      // [D, D] F_j (at the end: warpgroup 0's R_b)
  size_t bytes;
  __host__ __device__ explicit ChainSmem(unsigned char* base) {
    SmemCarver c{base};
    g = c.take<S>(tile_elems<S>(2 * kChunk, D));
    q = c.take<S>(tile_elems<S>(2 * kChunk, D));
    f = c.take<S>(tile_elems<S>(D, D));
    bytes = c.offset;
  }
};

// dst (D×D fp32, row stride D) += Xᵀ G over the pair's 128 rows (X = sm.q, G = sm.g) with atomics:
// 16-row tiles of dst, in column parts of at least 16 columns when there are fewer tiles than warps.
template <typename S, int D>
__device__ __forceinline__ void add_outer_product(float* dst, const ChainSmem<S, D>& sm) {
  constexpr int NTD = D / 8, ld = ChainSmem<S, D>::ld, row_tiles = D / 16;
  constexpr int parts = 2 * kWarps / row_tiles < NTD / 2 ? 2 * kWarps / row_tiles : NTD / 2, NT = NTD / parts;
  const int wp = warp_id();
  if (wp >= row_tiles * parts) return;
  const int tile = wp % row_tiles, col = (wp / row_tiles) * 8 * NT;
  float acc[NT][4];
  zero(acc);
  mma_ss<BLayout::KN, true, NT, 2 * kChunk / 16>(acc, sm.q + 16 * tile, ld, sm.g + col, ld);
  atomic_add_acc(acc, dst + 16 * tile * D + col, D);
}

// One block per pair of query chunks after span 0 (the pairs with the longest walks first).
template <typename S, int D>
__global__ void __launch_bounds__(kChainThreads)
    path_query_chain_kernel(PathAttentionCudaArgs<S> a, PathWorkspace<S> ws) {
  constexpr int NTD = D / 8;
  using Sm = ChainSmem<S, D>;
  constexpr int ld = Sm::ld;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const Sm sm(smem_raw);
  const int s = int(ws.span_chunks), nch = int(ws.chunks), wg = warp_id() / 4, r0 = 16 * (warp_id() % 4);
  const int pair = block_pairs(false, nch - s, s) - 1 - int(blockIdx.x);
  const int first = s + pair_first_block(false, pair, s), span = first / s, b = first + wg, b0 = b * kChunk;
  if (first >= nch) return;  // a pair of the last span past its last chunk
  // warpgroup 0 has its chunk from here on; warpgroup 1 where the pair's second chunk is its own
  const bool second_owned = pair_owns_block(false, first - s, 1, nch - s, s), own = wg == 0 || second_owned;
  const int64_t bh = blockIdx.y, pbase = bh * ws.padded;
  auto span_rows = [&](int j) { return ((bh * ws.spans + j) * ws.padded + b0) * D; };  // its chunk in slot j
  S* g_rows = sm.g + (64 * wg + r0) * ld;  // this warp's 16 rows of G

  // Across the earlier spans: G⁽⁰⁾ = dQ⁽⁰⁾, G⁽ʲ⁾ = dQ⁽ʲ⁾ + G⁽ʲ⁻¹⁾ F_jᵀ, dF_j += Q⁽ʲ⁾ᵀ G⁽ʲ⁻¹⁾.
  float g[NTD][4];
  zero(g);
  if (own) load_acc(g, ws.dqspan + span_rows(0) + r0 * D, D);
  for (int j = 1; j < span; ++j) {
    store_acc(g, g_rows, ld);
    const int64_t pair_rows = ((bh * ws.spans + j) * ws.padded + first * kChunk) * D;
    const int pair_valid = second_owned ? 2 * kChunk : kChunk;  // zeros past the pair's own rows
    load_tile_async<S, 2 * kChunk, D, kChainThreads>(sm.q, ws.qspan + pair_rows, D, pair_valid);
    load_tile_async<S, D, D, kChainThreads>(sm.f, ws.fspan + (bh * ws.spans + j) * D * D, D, D);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    add_outer_product(ws.dfspan + (bh * ws.spans + j) * D * D, sm);
    zero(g);
    if (own) load_acc(g, ws.dqspan + span_rows(j) + r0 * D, D);
    mma_ss<BLayout::NK, false, NTD, D / 16>(g, g_rows, ld, sm.f, ld);  // G's rounding as an operand either way
    __syncthreads();
  }
  // G is now the gradient of the chunk's queries at their span's start, Q̂_b R_b: dQ̂_b += G R_bᵀ (the
  // in-span pairs added theirs before), and G goes to gstart for the span gradients' dR_b = Q̂_bᵀ G.
  // R_b = I for a span's first chunk (warpgroup 0 of a span's first pair); the others' R_b arrive in
  // sm.f (warpgroup 0) and sm.q (warpgroup 1).
  for (int w = 0; w < (second_owned ? 2 : 1); ++w)
    if (first + w != span * s)
      load_tile_async<S, D, D, kChainThreads>(w == 0 ? sm.f : sm.q, ws.prefix + (bh * nch + first + w) * D * D, D,
                                              D);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  if (!own) return;
  float dqh[NTD][4];
  float* out = ws.dqh + (pbase + b0 + r0) * D;
  load_acc(dqh, out, D);
  if (b == span * s) {
    add_into(dqh, g);
  } else {
    store_acc(g, ws.gstart + (pbase + b0 + r0) * D, D);
    mma_acc<BLayout::NK>(dqh, g, wg == 0 ? sm.f : sm.q, ld);
  }
  store_acc(dqh, out, D);
}

// ---- span gradients ------------------------------------------------------------------------------
// Eight warps per block: one 16-row tile of A each at D = 128, and W_m A in column halves (D ≥ 32).

constexpr int kGradientWarps = 8, kGradientThreads = 32 * kGradientWarps;

template <typename S, int D>
struct GradientSmem {
  static constexpr int ld = stride_of<S>(D);
  SquareTile<S, D, kGradientWarps> a;  // A, the gradient of R_{m+1}
  S* r;                                // [D, D] R_m (staged for bf16; fp32 reads it in place)
  S *w, *y, *t;                        // [64, D] W_m, Y_m, W_m A
  S *q, *g;                            // [64, D] Q̂_m and G_m (staged for bf16; fp32 reads them in place)
  size_t bytes;
  __host__ __device__ explicit GradientSmem(unsigned char* base) {
    SmemCarver c{base};
    a.carve(c);
    r = c.take<S>(staged_bytes<S>(D, D) / sizeof(S));
    w = c.take<S>(tile_elems<S>(kChunk, D));
    y = c.take<S>(tile_elems<S>(kChunk, D));
    t = c.take<S>(tile_elems<S>(kChunk, D));
    q = c.take<S>(staged_bytes<S>(kChunk, D) / sizeof(S));
    g = c.take<S>(staged_bytes<S>(kChunk, D) / sizeof(S));
    bytes = c.offset;
  }
};

template <typename S, int D>
__global__ void __launch_bounds__(kGradientThreads) path_span_gradients_kernel(PathAttentionCudaArgs<S> a,
                                                                               PathWorkspace<S> ws) {
  constexpr int NTD = D / 8, KTD = D / 16, N = kGradientThreads;
  using Sm = GradientSmem<S, D>;
  constexpr int ld = Sm::ld, lda = SquareTile<S, D, kGradientWarps>::ld_operand;
  constexpr int t_parts = NTD >= 4 ? 2 : 1;  // column parts of W_m A (B fragments come in pairs of 8 columns)
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const Sm sm(smem_raw);
  const SpanBlock sp(a, ws);
  const int T = int(a.length), wp = warp_id();
  const int t_row = 16 * (wp % 4), t_col = (wp / 4) * (D / t_parts);  // this warp's part of W_m A
  const float* span_start_gradient = ws.gstart + sp.pbase * D;  // G of its queries

  const float* df = ws.dfspan + (sp.bh * ws.spans + sp.j) * D * D;
  sm.a.fill([df](int row, int col) { return df[row * D + col]; });
  for (int m = sp.end - 1; m >= sp.first; --m) {
    const int m0 = m * kChunk;
    const bool last_step = m == sp.first;  // only dP_m is left to do
    const TileRef<S> r = workspace_tile<S, D, D, N>(sm.r, ws.prefix + (sp.bh * ws.chunks + m) * D * D);
    TileRef<S> q{}, g{};
    if (!last_step) {
      load_tile_async<S, kChunk, D, N>(sm.y, ws.y + (sp.pbase + m0) * D, D, kChunk);
      load_tile_async<S, kChunk, D, N>(sm.w, a.w + (sp.base + m0) * D, D, T - m0);
      q = workspace_tile<S, kChunk, D, N>(sm.q, ws.qh + (sp.pbase + m0) * D);
    }
    cp_async_commit();
    if (!last_step) g = float_tile<S, kChunk, D, N>(sm.g, span_start_gradient + m0 * D);
    cp_async_wait<0>();
    __syncthreads();
    float* dpm = ws.dpm + (sp.bh * ws.chunks + m) * D * D;
    for (int tile = wp; tile < D / 16; tile += kGradientWarps) {  // dP_m += A R_mᵀ, rows 16·tile …
      float acc[NTD][4];
      load_acc(acc, dpm + 16 * tile * D, D);
      mma_ss<BLayout::NK, false, NTD, KTD>(acc, sm.a.operand + 16 * tile * lda, lda, r.p, r.ld);
      store_acc(acc, dpm + 16 * tile * D, D);
    }
    if (last_step) break;
    if (wp < 4 * t_parts) {  // W_m A, rows t_row …, columns t_col …
      float acc[NTD / t_parts][4];
      zero(acc);
      mma_ss<BLayout::KN, false, NTD / t_parts, KTD>(acc, sm.w + t_row * ld, ld, sm.a.operand + t_col, lda);
      store_acc(acc, sm.t + t_row * ld + t_col, ld);
    }
    __syncthreads();
    // The gradient of R_m: P_mᵀ A = A − Y_mᵀ (W_m A), plus Q̂_mᵀ G_m from chunk m's queries.
    sm.a.add_transposed_product({sm.y, ld}, {sm.t, ld}, -1.f);
    sm.a.add_transposed_product(q, g, 1.f);
    __syncthreads();
  }
}

}  // namespace

template <typename S>
void launch_path_span_transforms(const PathAttentionCudaArgs<S>& a, const PathWorkspace<S>& ws, cudaStream_t stream) {
  const dim3 grid(unsigned(ws.spans - 1), unsigned(a.batch_heads));
  with_head_dim(a.head_dim, [&]<int D>() {
    if constexpr (wgmma::kHasHopperForm<S, D>) {
      using L = span_hopper::TransformHopperLayout<D>;
      if (choose_hopper_form())
        return launch_kernel_threads(span_hopper::path_span_transforms_hopper_kernel<D>, grid, L::threads, L::bytes,
                                     stream, "path_span_transforms_hopper_kernel", a, ws);
    }
    launch_kernel(path_span_transforms_kernel<S, D>, grid, TransformSmem<S, D>(nullptr).bytes, stream,
                  "path_span_transforms_kernel", a, ws);
  });
}

template <typename S>
void launch_path_key_movers(const PathAttentionCudaArgs<S>& a, const PathWorkspace<S>& ws, cudaStream_t stream) {
  const dim3 grid(unsigned(ws.chunks), unsigned(a.batch_heads));
  with_head_dim(a.head_dim, [&]<int D>() {
    if constexpr (wgmma::kHasHopperForm<S, D>) {
      if (choose_hopper_form())
        return launch_kernel(span_hopper::path_key_movers_hopper_kernel<D>, grid,
                             span_hopper::KeyMoverHopperLayout<D>::bytes, stream, "path_key_movers_hopper_kernel", a,
                             ws);
    }
    launch_kernel(path_key_movers_kernel<S, D>, grid, KeyMoverSmem<S, D>(nullptr).bytes, stream, "path_key_movers_kernel",
                  a, ws);
  });
}

template <typename S>
void launch_path_query_movers(const PathAttentionCudaArgs<S>& a, const PathWorkspace<S>& ws, cudaStream_t stream) {
  const dim3 grid(unsigned(ws.chunks - ws.span_chunks), unsigned(a.batch_heads));
  with_head_dim(a.head_dim, [&]<int D>() {
    launch_kernel(path_query_movers_kernel<S, D>, grid, QueryMoverSmem<S, D>(nullptr).bytes, stream,
                  "path_query_movers_kernel", a, ws);
  });
}

template <typename S>
void launch_path_query_chain(const PathAttentionCudaArgs<S>& a, const PathWorkspace<S>& ws, cudaStream_t stream) {
  const int pairs = block_pairs(false, int(ws.chunks - ws.span_chunks), int(ws.span_chunks));
  const dim3 grid(unsigned(pairs), unsigned(a.batch_heads));
  with_head_dim(a.head_dim, [&]<int D>() {
    launch_kernel_threads(path_query_chain_kernel<S, D>, grid, kChainThreads, ChainSmem<S, D>(nullptr).bytes, stream,
                          "path_query_chain_kernel", a, ws);
  });
}

template <typename S>
void launch_path_span_gradients(const PathAttentionCudaArgs<S>& a, const PathWorkspace<S>& ws, cudaStream_t stream) {
  const dim3 grid(unsigned(ws.spans - 1), unsigned(a.batch_heads));
  with_head_dim(a.head_dim, [&]<int D>() {
    if constexpr (wgmma::kHasHopperForm<S, D>) {
      using L = span_hopper::GradientHopperLayout<D>;
      if (choose_hopper_form())
        return launch_kernel_threads(span_hopper::path_span_gradients_hopper_kernel<D>, grid, L::threads, L::bytes,
                                     stream, "path_span_gradients_hopper_kernel", a, ws);
    }
    launch_kernel_threads(path_span_gradients_kernel<S, D>, grid, kGradientThreads, GradientSmem<S, D>(nullptr).bytes,
                          stream, "path_span_gradients_kernel", a, ws);
  });
}

#define PATHBENCH_INSTANTIATE(S)                                                                                    \
  template void launch_path_span_transforms<S>(const PathAttentionCudaArgs<S>&, const PathWorkspace<S>&,            \
                                               cudaStream_t);                                                       \
  template void launch_path_key_movers<S>(const PathAttentionCudaArgs<S>&, const PathWorkspace<S>&, cudaStream_t);  \
  template void launch_path_query_movers<S>(const PathAttentionCudaArgs<S>&, const PathWorkspace<S>&, cudaStream_t); \
  template void launch_path_query_chain<S>(const PathAttentionCudaArgs<S>&, const PathWorkspace<S>&, cudaStream_t); \
  template void launch_path_span_gradients<S>(const PathAttentionCudaArgs<S>&, const PathWorkspace<S>&, cudaStream_t);
PATHBENCH_INSTANTIATE(float)
PATHBENCH_INSTANTIATE(bf16)
#undef PATHBENCH_INSTANTIATE

}  // namespace pathbench::cuda
