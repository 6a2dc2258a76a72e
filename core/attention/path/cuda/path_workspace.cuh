// Internal to the PaTH CUDA kernels (path_forward.cu, path_backward.cu, path_span.cu): the workspace layout
// and the span launchers. The forward's workspace keeps what the backward reads (the prep outputs,
// the span transforms and prefixes, K̄); the backward has its own besides. Per-token workspace
// tensors are padded to whole chunks (Tp = 64·chunks rows per slice) and their padding rows hold
// zeros (the padding tokens have w = 0, β = 0: H = I), so kernels may read whole chunk tiles of them
// without bounds checks — fp32 kernels read such tiles in place from global memory instead of
// staging them in shared memory.
#pragma once
#include "core/attention/cuda/tiles.cuh"
#include "core/attention/path/cuda/path_kernels.h"
#include "core/cuda/hopper.h"
#include "core/error.h"

#include <algorithm>
#include <cmath>

namespace pathbench::cuda {

template <typename S>
struct PathWorkspace {
  int64_t chunks = 0, padded = 0;  // chunks per slice, Tp = 64·chunks
  int64_t span_chunks = 1, spans = 1;  // chunks per span s, spans ⌈chunks / s⌉
  int state_blocks = 0;            // resident blocks of the in-span key scan, each with its own key states
  bool for_backward = true;        // false: the buffers marked (backward) below are null and not written
  bool cross_span_room = false;    // the forward's workspace holds ocross and lsecross (below)
  // The forward's workspace, kept for the backward. Prep outputs:
  S* qh = nullptr;        // [BH, Tp, D] queries moved to their chunk's start
  S* kh = nullptr;        // [BH, Tp, D] keys moved to their chunk's end
  S* y = nullptr;         // [BH, Tp, D] X W
  S* yp = nullptr;        // [BH, Tp, D] Xᵀ W
  float* sd = nullptr;    // [BH, chunks, 64, 64] the chunk's own logits (unscaled, no bias)
  S* mm = nullptr;        // [BH, chunks, 64, 64] M = X·strict_lower(W Kᵀ) (backward)
  S* ainv = nullptr;      // [BH, chunks, 64, 64] A⁻¹ (bf16: A⁻¹_hi), A = I + diag(β) strict_lower(W Wᵀ), so
                          //   that the backward's Z = A⁻ᵀ dX is a matrix product (backward)
  S* ainvlo = nullptr;    // [BH, chunks, 64, 64] bf16 only: A⁻¹_lo = bf16(A⁻¹ − A⁻¹_hi), so that A⁻¹_hi + A⁻¹_lo
                          //   carries A⁻¹'s products to fp32-like accuracy (path_forward.cu, prep) (backward)
  // The backward forms X = A⁻¹ diag(β), strict_lower(W Kᵀ) and tril(Q Wᵀ) again from these and its
  // inputs: fewer bytes than storing and reloading them.
  // spans:
  S* fspan = nullptr;     // [BH, spans, D, D] F_j = P_last ⋯ P_first: a query crosses span j as U F_j
  S* prefix = nullptr;    // [BH, chunks, D, D] R_m = P_{m−1} ⋯ P_first of m's span (spans after the first)
                          //   (backward)
  S* kbar = nullptr;      // [BH, Tp, D] K̄: keys moved to their span's end
  S* qspan = nullptr;     // [BH, spans, Tp, D] Q⁽ʲ⁾: queries of later spans moved to span j's end (backward)
  // Where the forward takes the pairs across spans in a pass of their own (path_forward.cu: bf16 at
  // D = 64 and 128 on Hopper), that pass's partial result; laid out where the build holds the Hopper
  // kernels (cross_span_room), so that the workspace's size asks no device:
  float* ocross = nullptr;    // [BH, Tp, D] each query's output over the keys of earlier spans (normalized)
  float* lsecross = nullptr;  // [BH, Tp] and its log-sum-exp (natural log)
  // The backward's own workspace:
  float* delta = nullptr;    // [BH, T] rowsum(dO ∘ O)
  float* dqh = nullptr;      // [BH, Tp, D] dQ̂ (atomics)
  float* dkh = nullptr;      // [BH, Tp, D] dK̂ from other chunks' queries: the key-major pass stores dK̄ there,
                             //   the in-span scan turns it into dK̂ in place
  float* dvc = nullptr;      // [BH, Tp, D] dV from other chunks' queries
  float* dcc = nullptr;      // [BH, Tp] d(cum log gate) of keys from other chunks' queries
  float* dpm = nullptr;      // [BH, chunks, D, D] dP for every chunk product P = I − Wᵀ X W (atomics)
  S* states = nullptr;       // [state_blocks, s, 64, D] key states K̃ of the key chunk in flight
  S* dqspan = nullptr;       // [BH, spans, Tp, D] dQ⁽ʲ⁾ (atomics, in S: bf16 rounds each add; the rows of
                             //   Q⁽ʲ⁾ are zeroed first)
  float* gstart = nullptr;   // [BH, Tp, D] the gradient G of the queries at their span's start (spans
                             //   after the first)
  float* dfspan = nullptr;   // [BH, spans, D, D] dF_j (atomics)
  // Local a's hand-offs to local b where the two run as kernels of their own (not where one Hopper
  // kernel runs both, path_local_ab_hopper.cuh, which keeps all but dw_part on chip):
  S* dm = nullptr;           // [BH, chunks, 64, 64] dM (bf16: its only use is as a product operand)
  S* dy = nullptr;           // [BH, Tp, D] dY (likewise)
  float* dk_part = nullptr;  // [BH, Tp, D] dk before the strict_lower(W Kᵀ) term
  float* dw_part = nullptr;  // [BH, Tp, D] dw before the X and Gram terms

  // Chunks per span: the requested count (at most all chunks), else about 0.9·√chunks — the in-span
  // scan's work grows with the span, the spans' dense D×D work with their number, and on one H100
  // 0.9·√chunks was fastest at 32, 64 and 128 chunks (docs/cuda-attention-notes.md v34) — at D = 128
  // an odd count from 7 up taken down by one, since the key-major pass and the query chain pair a
  // span's chunks and an odd span leaves a warpgroup idle in each (v49: 7 → 6 paid, 5 → 4 did not);
  // but at least 4 (or all chunks, if fewer: at short sequences the dense work does not pay for
  // itself, v24) and at least ⌈chunks / 16⌉, so that the workspaces (T·D per span) stay within 16 spans.
  static int64_t span_chunks_for(const PathAttentionCudaArgs<S>& a, int64_t chunks) {
    if (a.span_chunks > 0) return std::min(a.span_chunks, chunks);
    auto near_root = int64_t(0.9 * std::sqrt(double(chunks)) + 0.5);
    if (a.head_dim == 128 && near_root >= 7) near_root -= near_root % 2;
    return std::min(chunks, std::max({int64_t(4), near_root, (chunks + 15) / 16}));
  }

  // The chunk and span counts of a call, no buffers yet.
  explicit PathWorkspace(const PathAttentionCudaArgs<S>& a)
      : chunks((a.length + tiles::kChunk - 1) / tiles::kChunk),
        padded(chunks * tiles::kChunk),
        span_chunks(span_chunks_for(a, chunks)),
        spans((chunks + span_chunks - 1) / span_chunks),
        for_backward(a.for_backward),
        cross_span_room(a.for_backward && spans > 1 && std::is_same_v<S, tiles::bf16> &&
                        (a.head_dim == 64 || a.head_dim == 128) && hopper_kernels_built()) {}

  // Lays the forward's buffers over `base` and returns their bytes (sizes only when base is null);
  // a forward alone (for_backward false) leaves the backward's out.
  size_t carve_forward(void* base, const PathAttentionCudaArgs<S>& a) {
    WorkspaceCarver c(base);
    const int64_t bh = a.batch_heads, d = a.head_dim, rows = bh * padded, cc = chunk_blocks(a);
    auto for_backward_only = [&]<typename T>(T*& p, int64_t count) { p = for_backward ? c.take<T>(count) : nullptr; };
    qh = c.take<S>(rows * d);
    kh = c.take<S>(rows * d);
    y = c.take<S>(rows * d);
    yp = c.take<S>(rows * d);
    sd = c.take<float>(cc);
    for_backward_only(mm, cc);
    for_backward_only(ainv, cc);
    for_backward_only(ainvlo, sizeof(S) == sizeof(float) ? 0 : cc);  // fp32 keeps A⁻¹ whole
    fspan = c.take<S>(bh * spans * d * d);
    for_backward_only(prefix, bh * chunks * d * d);
    kbar = c.take<S>(rows * d);
    for_backward_only(qspan, bh * spans * padded * d);
    ocross = cross_span_room ? c.take<float>(rows * d) : nullptr;
    lsecross = cross_span_room ? c.take<float>(rows) : nullptr;
    return c.bytes();
  }

  // Lays the backward's own buffers over `base` and returns their bytes (sizes only when base is
  // null); the persistent in-span scan keeps key states for `blocks` resident blocks.
  size_t carve_backward(void* base, const PathAttentionCudaArgs<S>& a, int blocks) {
    WorkspaceCarver c(base);
    const int64_t bh = a.batch_heads, d = a.head_dim, rows = bh * padded, cc = chunk_blocks(a);
    state_blocks = blocks;
    delta = c.take<float>(bh * a.length);
    dqh = c.take<float>(rows * d);
    dkh = c.take<float>(rows * d);
    dvc = c.take<float>(rows * d);
    dcc = c.take<float>(rows);
    dpm = c.take<float>(bh * chunks * d * d);
    states = c.take<S>(int64_t(blocks) * span_chunks * tiles::kChunk * d);
    dqspan = c.take<S>(bh * spans * padded * d);
    gstart = c.take<float>(rows * d);
    dfspan = c.take<float>(bh * spans * d * d);
    dm = c.take<S>(cc);
    dy = c.take<S>(rows * d);
    dk_part = c.take<float>(rows * d);
    dw_part = c.take<float>(rows * d);
    return c.bytes();
  }

 private:
  int64_t chunk_blocks(const PathAttentionCudaArgs<S>& a) const {  // elements of one [BH, chunks, 64, 64] array
    return a.batch_heads * chunks * tiles::kChunk * tiles::kChunk;
  }
};

// The span of a span-transform or span-gradient block: span j = blockIdx.x + 1 (chunks first …
// end − 1) of slice bh = blockIdx.y.
struct SpanBlock {
  int j, first, end;
  int64_t bh, base, pbase;  // slice, its first token, its first padded row
  template <typename S>
  __device__ SpanBlock(const PathAttentionCudaArgs<S>& a, const PathWorkspace<S>& ws)
      : j(int(blockIdx.x) + 1),
        first(j * int(ws.span_chunks)),
        end(min(first + int(ws.span_chunks), int(ws.chunks))),
        bh(blockIdx.y),
        base(bh * a.length),
        pbase(bh * ws.padded) {}
};

// Throws when the shape is unsupported or an input is missing; `function` names the caller.
template <typename S>
void check_path_args(const PathAttentionCudaArgs<S>& a, const char* function) {
  check_attention_shape(a.batch_heads, a.length, a.head_dim, function);
  if (!a.q || !a.k || !a.v || !a.w || !a.beta) throw Error(std::string(function) + ": q, k, v, w and beta are required");
}

// The span kernels (path_span.cu), in the order the passes queue them. Forward: fspan and (when the
// workspace is kept for a backward) prefix for every span after the first;
template <typename S>
void launch_path_span_transforms(const PathAttentionCudaArgs<S>& a, const PathWorkspace<S>& ws, cudaStream_t stream);
// kbar for every key chunk;
template <typename S>
void launch_path_key_movers(const PathAttentionCudaArgs<S>& a, const PathWorkspace<S>& ws, cudaStream_t stream);
// (when the workspace is kept for a backward and the Hopper cross-span pass does not run) qspan for
// every query chunk after span 0.
template <typename S>
void launch_path_query_movers(const PathAttentionCudaArgs<S>& a, const PathWorkspace<S>& ws, cudaStream_t stream);
// Backward: dQ⁽ʲ⁾ carried back through the F_j (into dfspan) to each query chunk's span start, then
// through its prefix into dqh (that span-start gradient is kept in gstart for the span gradients);
template <typename S>
void launch_path_query_chain(const PathAttentionCudaArgs<S>& a, const PathWorkspace<S>& ws, cudaStream_t stream);
// dfspan and the queries' prefix gradients pushed to the dP of each span's chunks.
template <typename S>
void launch_path_span_gradients(const PathAttentionCudaArgs<S>& a, const PathWorkspace<S>& ws, cudaStream_t stream);

namespace tiles {

// fp32 kernels read padded workspace tiles in place; bf16 kernels stage them in shared memory for
// ldmatrix.
template <typename S>
constexpr bool kInPlace = sizeof(S) == 4;

// Stores two adjacent values x as hi = S(x) and, for bf16, lo = S(x − hi): hi + lo carries about 16
// significant bits into the products that take both (X, A⁻¹, dX). fp32 stores x whole at hi and
// leaves lo alone.
template <typename S>
__device__ __forceinline__ void store_split_pair(S* hi, S* lo, float x0, float x1) {
  const float h0 = to_float(from_float<S>(x0)), h1 = to_float(from_float<S>(x1));
  store_pair(hi, h0, h1);
  if constexpr (!kInPlace<S>) store_pair(lo, x0 - h0, x1 - h1);
}
// Stores a warp's 16 accumulator rows as hi and lo tiles of one row stride (store_split_pair).
template <int NT, typename S>
__device__ __forceinline__ void store_acc_split(const float (&acc)[NT][4], S* hi, S* lo, int ld) {
#pragma unroll
  for (int n = 0; n < NT; ++n)
#pragma unroll
    for (int e = 0; e < 4; e += 2) {
      const int at = acc_row(e) * ld + acc_col(n, e);
      store_split_pair(hi + at, lo + at, acc[n][e], acc[n][e + 1]);
    }
}

// Where an operand tile lives: base pointer and row stride (elements).
template <typename S>
struct TileRef {
  const S* p;
  int ld;
};

// A whole (padded) workspace tile of ROWS × COLS: staged into `smem` (async; commit/wait by the
// caller) for bf16, or referenced in place for fp32.
template <typename S, int ROWS, int COLS, int NTHREADS = kThreads>
__device__ __forceinline__ TileRef<S> workspace_tile(S* smem, const S* gmem) {
  if constexpr (kInPlace<S>) {
    return {gmem, COLS};
  } else {
    load_tile_async<S, ROWS, COLS, NTHREADS>(smem, gmem, COLS, ROWS);
    return {smem, stride_of<S>(COLS)};
  }
}

// An fp32 accumulator tile of the workspace (ROWS × COLS, row stride COLS, 16-byte aligned) as an S
// operand tile: converted into `smem` for bf16 (plain loads, BATCH float4 per thread in flight
// before their stores, fewer where registers are short; a barrier must follow), in place for fp32.
template <typename S, int ROWS, int COLS, int NTHREADS = kThreads, int BATCH = 8>
__device__ __forceinline__ TileRef<S> float_tile(S* smem, const float* gmem) {
  if constexpr (kInPlace<S>) {
    return {reinterpret_cast<const S*>(gmem), COLS};
  } else {
    static_assert(COLS % 4 == 0);
    constexpr int ld = stride_of<S>(COLS), quads = ROWS * COLS / 4, batch = BATCH;
    for (int first = 0; first < quads; first += batch * NTHREADS) {
      float4 v[batch];
#pragma unroll
      for (int k = 0; k < batch; ++k) {
        const int i = first + k * NTHREADS + int(threadIdx.x);
        if (i < quads) v[k] = reinterpret_cast<const float4*>(gmem)[i];
      }
#pragma unroll
      for (int k = 0; k < batch; ++k) {
        const int i = first + k * NTHREADS + int(threadIdx.x), r = (4 * i) / COLS, c = (4 * i) % COLS;
        if (i < quads) {
          store_pair(smem + r * ld + c, v[k].x, v[k].y);
          store_pair(smem + r * ld + c + 2, v[k].z, v[k].w);
        }
      }
    }
    return {smem, ld};
  }
}

// Bytes of a staged tile: zero when fp32 reads it in place.
template <typename S>
__host__ __device__ constexpr size_t staged_bytes(int rows, int cols) {
  return kInPlace<S> ? 0 : size_t(tile_elems<S>(rows, cols)) * sizeof(S);
}

// Keeps acc(i, j) where keep(i, j) for the warp's rows i = row0 + 0…15 and columns j, zero elsewhere.
template <int NT, typename Keep>
__device__ __forceinline__ void mask_acc(float (&acc)[NT][4], int row0, Keep keep) {
#pragma unroll
  for (int n = 0; n < NT; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (!keep(row0 + acc_row(e), acc_col(n, e))) acc[n][e] = 0.f;
}

// u ← u (I − Aᵀ B) for the warp's 16 rows u (accumulator layout, D columns) and one chunk's [64, D]
// operand tiles A, B: with A = W, B = Y = X W a query crosses the chunk leftwards (u P); with A = W,
// B = Xᵀ W a key crosses it rightwards (u Pᵀ); with A = W, B = Y a key gradient flows back (dK̃ P);
// with A = Y, B = W a query gradient flows back (dU Pᵀ).
template <int NTD, typename S>
__device__ __forceinline__ void cross_chunk(float (&u)[NTD][4], const S* a, int lda, const S* b, int ldb) {
  float t[8][4];
  zero(t);
  mma_acc<BLayout::NK>(t, u, a, lda);
  mma_acc<BLayout::KN>(u, t, b, ldb, -1.f);
}

// The warp's 16 rows of a query chunk's own logits x (the prep's: unscaled, no bias), from the
// chunk's [64, 64] fp32 block sd.
__device__ __forceinline__ void load_own_logits(float (&x)[8][4], const float* sd) {
  const float* rows = sd + 16 * warp_id() * kChunk;
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) x[n][e] = rows[acc_row(e) * kChunk + acc_col(n, e)];
}

// u ← u M for the warp's 16 rows u (accumulator layout, D columns) and a D×D operand tile M: a query
// crossing a whole span (M = F_j) or reaching its span's start (M = R_m).
template <int NTD, typename S>
__device__ __forceinline__ void multiply_square(float (&u)[NTD][4], const S* m, int ldm) {
  float moved[NTD][4];
  zero(moved);
  mma_acc<BLayout::KN>(moved, u, m, ldm);
#pragma unroll
  for (int n = 0; n < NTD; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) u[n][e] = moved[n][e];
}

template <int NT>
__device__ __forceinline__ void add_into(float (&acc)[NT][4], const float (&x)[NT][4]) {
#pragma unroll
  for (int n = 0; n < NT; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[n][e] += x[n][e];
}

template <int NT>
__device__ __forceinline__ void negate(float (&acc)[NT][4]) {
#pragma unroll
  for (int n = 0; n < NT; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[n][e] = -acc[n][e];
}

}  // namespace tiles

}  // namespace pathbench::cuda
