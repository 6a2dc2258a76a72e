// PaTH attention, CUDA: the per-chunk prep kernel (UT transform) and the forward scan, and the
// forward pass that queues them with the span kernels; the backward kernels live in
// path_backward.cu. Algorithm: path_kernels.h and docs/design.md §4. Both kernels stay portable on
// Hopper (a wgmma form of the whole scan was 4–20 % slower there, cuda-attention-notes v35); where
// the workspace is kept for a backward, Hopper takes the pairs across spans in the cross-span
// kernel (path_cross_span_hopper.cuh) and the scan only its query chunk's own span.
#include "core/attention/cuda/online_softmax.cuh"
#include "core/attention/path/cuda/path_cross_span_hopper.cuh"
#include "core/attention/path/cuda/path_workspace.cuh"
#include "core/error.h"

namespace pathbench::cuda {

namespace {

using namespace tiles;

// ---- prep: one block per chunk ---------------------------------------------------------------------
// Its outputs that only the backward reads (A⁻¹ and M) are stored only when the workspace is kept
// for a backward (ws.for_backward); the forward reads the moved queries and keys, Y, Xᵀ W and the
// chunk's own logits. X, strict_lower(W Kᵀ) and tril(Q Wᵀ) are not stored: the backward forms them
// again (a scaling and two products against 32 KB of stores and 32 KB of loads a chunk at bf16).

// A⁻¹ for A = I + diag(β) strict_lower(G), G symmetric ([64, 64] fp32 in shared memory, row stride
// ldg), in 16 × 16 blocks so that all four warps work and no chain is longer than 16 steps: the
// diagonal blocks' inverses D_I by forward substitution (one column per thread on two warps, while
// the other two zero the blocks above the diagonal), then the blocks below it by sub-diagonals
// d = 1, 2, 3 (block row I = J + d):
//   T_IJ = diag(β_I) G[I, J … I−1] M[J … I−1, J],   M_IJ = −D_I T_IJ,
// T through `scratch` ([3][16, 17] floats). Each thread takes one column j and the rows i0, i0 + 8 of
// every block of a level, so its M loads serve two rows. Rows past the sequence's end have β = 0 and
// come out as those of I. The whole block calls it; m (row stride ldm) must not alias g or scratch.
constexpr int kInvBlock = 16, kInvScratch = kInvBlock * (kInvBlock + 1);

template <int kLevel>
__device__ __forceinline__ void unit_lower_inverse_level(const float* g, int ldg, const float* beta, float* m, int ldm,
                                                         float* scratch) {
  constexpr int B = kInvBlock, kBlocks = 4 - kLevel;
  const int j = int(threadIdx.x) % B, i0 = int(threadIdx.x) / B;  // i0 in 0 … 7
#pragma unroll
  for (int J = 0; J < kBlocks; ++J) {  // T_IJ
    const int I = J + kLevel, col = J * B + j;
    float s0 = 0.f, s1 = 0.f;
#pragma unroll
    for (int r = 0; r < kLevel * B; ++r) {
      const float mv = m[(J * B + r) * ldm + col];
      s0 = fmaf(g[(I * B + i0) * ldg + J * B + r], mv, s0);
      s1 = fmaf(g[(I * B + i0 + 8) * ldg + J * B + r], mv, s1);
    }
    scratch[J * kInvScratch + i0 * (B + 1) + j] = beta[I * B + i0] * s0;
    scratch[J * kInvScratch + (i0 + 8) * (B + 1) + j] = beta[I * B + i0 + 8] * s1;
  }
  __syncthreads();
#pragma unroll
  for (int J = 0; J < kBlocks; ++J) {  // M_IJ = −D_I T_IJ (D_I's upper triangle holds zeros)
    const int I = J + kLevel;
    float s0 = 0.f, s1 = 0.f;
#pragma unroll
    for (int l = 0; l < B; ++l) {
      const float tv = scratch[J * kInvScratch + l * (B + 1) + j];
      s0 = fmaf(m[(I * B + i0) * ldm + I * B + l], tv, s0);
      s1 = fmaf(m[(I * B + i0 + 8) * ldm + I * B + l], tv, s1);
    }
    m[(I * B + i0) * ldm + J * B + j] = -s0;
    m[(I * B + i0 + 8) * ldm + J * B + j] = -s1;
  }
  __syncthreads();
}

__device__ __forceinline__ void unit_lower_inverse(const float* g, int ldg, const float* beta, float* m, int ldm,
                                                   float* scratch) {
  constexpr int B = kInvBlock;
  static_assert(kThreads == 8 * B, "a level's blocks take 16 columns × 8 row pairs of threads");
  const int t = int(threadIdx.x);
  if (t < kChunk) {  // thread (I, c): column c of D_I, right-looking in registers
    const int base = t / B * B, c = t % B;
    float acc[B];
#pragma unroll
    for (int i = 0; i < B; ++i) acc[i] = 0.f;
#pragma unroll
    for (int l = 0; l < B; ++l) {
      const float x = l < c ? 0.f : (l == c ? 1.f : -beta[base + l] * acc[l]);
      m[(base + l) * ldm + base + c] = x;
#pragma unroll
      for (int i = l + 1; i < B; ++i) acc[i] = fmaf(g[(base + l) * ldg + base + i], x, acc[i]);
    }
  } else {  // the six blocks above the diagonal: row r of block row I, columns past its diagonal block
    for (int e = t - kChunk; e < kChunk * kChunk; e += kThreads - kChunk) {
      const int r = e / kChunk, col = e % kChunk;
      if (col >= (r / B + 1) * B) m[r * ldm + col] = 0.f;
    }
  }
  __syncthreads();
  unit_lower_inverse_level<1>(g, ldg, beta, m, ldm, scratch);
  unit_lower_inverse_level<2>(g, ldg, beta, m, ldm, scratch);
  unit_lower_inverse_level<3>(g, ldg, beta, m, ldm, scratch);
}

// Buffers share space by lifetime, so that four blocks fit a multiprocessor at bf16 D ≤ 64 (two at
// D = 128): W, then M's [64, 64] place (the solve's scratch, in bf16 X_lo, then M) and β, then the
// fp32 space: the Gram matrix and A⁻¹ until the conversion, then (`After`) X's operand (bf16 X_hi,
// in the Gram matrix's dead space while A⁻¹ is read; fp32 X in A⁻¹'s place), Y (its place later
// strict_lower(W Kᵀ), once Q̂ has read Y), Q and K, both copied in after the conversion (their first
// readers, tril(Q Wᵀ) and strict_lower(W Kᵀ), come after the Y products, which hide the copies).
// bf16 keeps X as two operands, X ≈ X_hi + X_lo (X_hi = bf16(X), X_lo = bf16(X − X_hi)), and every
// product with X takes both: X's entries alternate in sign and cancel in X W, so X rounded to bf16
// alone can turn P = I − Wᵀ X W from a contraction into a 2.5× expansion when a chunk's w are
// (nearly) parallel, and the queries blow up across chunks.
template <typename S, int D>
struct PrepSmem {
  static constexpr int ld = stride_of<S>(D), ldc = stride_of<S>(kChunk), ldf = stride_of<float>(kChunk);
  static constexpr size_t gram_bytes = tile_elems<float>(kChunk, kChunk) * sizeof(float);
  static constexpr size_t tile_bytes = tile_elems<S>(kChunk, D) * sizeof(S);     // a [64, D] tile (W, Y, Q, K)
  static constexpr size_t sq_bytes = tile_elems<S>(kChunk, kChunk) * sizeof(S);  // a [64, 64] operand
  // Offsets in the fp32 space of what lives there after the conversion, each 16-byte aligned; in
  // place (fp32) the tiles step over X's space [gram_bytes, 2·gram_bytes).
  struct After {
    size_t xs, ysl, q, k, end;
  };
  __host__ __device__ static constexpr After after() {
    size_t at = 0;
    const auto place = [&at](size_t n) {
      at = (at + 15) / 16 * 16;
      if (kInPlace<S> && at < 2 * gram_bytes && at + n > gram_bytes) at = 2 * gram_bytes;
      const size_t p = at;
      at += n;
      return p;
    };
    After a{};
    a.xs = kInPlace<S> ? gram_bytes : place(sq_bytes);
    a.ysl = place(tile_bytes > sq_bytes ? tile_bytes : sq_bytes);
    a.q = place(tile_bytes);
    a.k = place(tile_bytes);
    a.end = at > 2 * gram_bytes ? at : 2 * gram_bytes;
    return a;
  }
  static constexpr After kAfter = after();
  static_assert(kInPlace<S> || kAfter.xs + sq_bytes <= gram_bytes, "X_hi is written while A⁻¹ is read");
  static_assert(3 * kInvScratch * sizeof(float) <= sq_bytes, "the solve's scratch fits M's place");
  S *w, *mm;           // [64, D] W; [64, 64] M's place
  float* beta;         // [64]
  float *g, *x;        // [64, 64] the Gram matrix W Wᵀ and A⁻¹, then X in place (fp32)
  S *xs, *y, *sl;      // [64, 64] X's operand (bf16: X_hi); [64, D] Y, then [64, 64] strict_lower(W Kᵀ)
  S *q, *k;            // [64, D]
  size_t bytes;
  __host__ __device__ explicit PrepSmem(unsigned char* base) {
    SmemCarver c{base};
    w = c.take<S>(tile_elems<S>(kChunk, D));
    mm = c.take<S>(tile_elems<S>(kChunk, kChunk));
    beta = c.take<float>(kChunk);
    unsigned char* f = c.take<unsigned char>(kAfter.end);
    const auto at = [base, f](size_t offset) { return base ? f + offset : nullptr; };
    g = reinterpret_cast<float*>(at(0));
    x = reinterpret_cast<float*>(at(gram_bytes));
    xs = reinterpret_cast<S*>(at(kAfter.xs));
    y = sl = reinterpret_cast<S*>(at(kAfter.ysl));
    q = reinterpret_cast<S*>(at(kAfter.q));
    k = reinterpret_cast<S*>(at(kAfter.k));
    bytes = c.offset;
  }
};
// Four blocks a multiprocessor where registers allow them (bf16 at D ≤ 64: ptxas fits 128).
template <typename S, int D>
inline constexpr int kPrepMinBlocks = !kInPlace<S> && D <= 64 ? 4 : 1;

template <typename S, int D>
__global__ void __launch_bounds__(kThreads, kPrepMinBlocks<S, D>)
    path_prep_kernel(PathAttentionCudaArgs<S> a, PathWorkspace<S> ws) {
  constexpr int NTD = D / 8, KTD = D / 16;
  using Sm = PrepSmem<S, D>;
  constexpr int ld = Sm::ld, ldc = Sm::ldc, ldf = Sm::ldf;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const Sm sm(smem_raw);
  const int T = int(a.length), c = int(blockIdx.x), c0 = c * kChunk, valid = T - c0, r0 = 16 * warp_id();
  const int64_t bh = blockIdx.y, tok = bh * T + c0, ptok = bh * ws.padded + c0;
  const int64_t cc = (bh * ws.chunks + c) * kChunk * kChunk;  // this chunk's [64, 64] blocks

  load_tile_async<S, kChunk, D>(sm.w, a.w + tok * D, D, valid);
  cp_async_commit();
  load_row_values(sm.beta, a.beta + tok, kChunk, valid, 0.f);
  cp_async_wait<0>();
  __syncthreads();

  {  // Gram matrix W Wᵀ
    float g[8][4];
    zero(g);
    mma_ss<BLayout::NK, false, 8, KTD>(g, sm.w + r0 * ld, ld, sm.w, ld);
    store_acc(g, sm.g + r0 * ldf, ldf);
  }
  __syncthreads();
  // A⁻¹, A = I + diag(β) strict_lower(W Wᵀ), blocked; M's place is free until the conversion below
  // and holds the solve's scratch.
  unit_lower_inverse(sm.g, ldf, sm.beta, sm.x, ldf, reinterpret_cast<float*>(sm.mm));
  // X = A⁻¹ diag(β): in place for fp32, as X_hi (over the dead Gram matrix), X_lo (M's place) for
  // bf16. The backward keeps A⁻¹ (its Z = A⁻ᵀ dX is then a product, not a second substitution).
  for (int i = 2 * int(threadIdx.x); i < kChunk * kChunk; i += 2 * kThreads) {  // columns c, c + 1 of row r
    const int r = i / kChunk, c = i % kChunk;
    const float2 inv = load_pair(sm.x + r * ldf + c);
    const float x0 = inv.x * sm.beta[c], x1 = inv.y * sm.beta[c + 1];
    if (ws.for_backward) store_split_pair(ws.ainv + cc + i, ws.ainvlo + cc + i, inv.x, inv.y);
    if constexpr (kInPlace<S>)
      store_pair(sm.x + r * ldf + c, x0, x1);
    else
      store_split_pair(sm.xs + r * ldc + c, sm.mm + r * ldc + c, x0, x1);
  }
  __syncthreads();  // bf16: A⁻¹'s fp32 copy is dead from here on (Y's, Q's and K's places)
  load_tile_async<S, kChunk, D>(sm.q, a.q + tok * D, D, valid);
  load_tile_async<S, kChunk, D>(sm.k, a.k + tok * D, D, valid);
  cp_async_commit();

  {  // Y = X W (kept for Q̂), Yᵀ-side Y' = Xᵀ W for the key moves
    float y[NTD][4];
    zero(y);
    mma_ss<BLayout::KN, false, NTD, 4>(y, sm.xs + r0 * ldc, ldc, sm.w, ld);
    if constexpr (!kInPlace<S>) mma_ss<BLayout::KN, false, NTD, 4>(y, sm.mm + r0 * ldc, ldc, sm.w, ld);
    store_acc(y, sm.y + r0 * ld, ld);
    store_acc(y, ws.y + (ptok + r0) * D, D);
    zero(y);
    mma_ss<BLayout::KN, true, NTD, 4>(y, sm.xs + r0, ldc, sm.w, ld);
    if constexpr (!kInPlace<S>) mma_ss<BLayout::KN, true, NTD, 4>(y, sm.mm + r0, ldc, sm.w, ld);
    store_acc(y, ws.yp + (ptok + r0) * D, D);
  }
  cp_async_wait<0>();
  __syncthreads();  // Q and K in place, and every warp's rows of Y
  float qw[8][4];  // tril(Q Wᵀ), this warp's rows
  zero(qw);
  mma_ss<BLayout::NK, false, 8, KTD>(qw, sm.q + r0 * ld, ld, sm.w, ld);
  mask_acc(qw, r0, [](int i, int j) { return j <= i; });
  {  // Q̂ = Q − tril(Q Wᵀ) Y
    float qh[NTD][4];
    load_acc(qh, sm.q + r0 * ld, ld);
    mma_acc<BLayout::KN>(qh, qw, sm.y, ld, -1.f);
    store_acc(qh, ws.qh + (ptok + r0) * D, D);
  }
  __syncthreads();  // Y is no longer read: strict_lower(W Kᵀ) takes its place
  {
    float sl[8][4];
    zero(sl);
    mma_ss<BLayout::NK, false, 8, KTD>(sl, sm.w + r0 * ld, ld, sm.k, ld);
    mask_acc(sl, r0, [](int i, int j) { return j < i; });
    store_acc(sl, sm.sl + r0 * ldc, ldc);
  }
  __syncthreads();
  {  // M = X strict_lower(W Kᵀ); bf16: M's rows replace the X_lo rows this warp alone has read
    float m[8][4];
    zero(m);
    mma_ss<BLayout::KN, false, 8, 4>(m, sm.xs + r0 * ldc, ldc, sm.sl, ldc);
    if constexpr (!kInPlace<S>) mma_ss<BLayout::KN, false, 8, 4>(m, sm.mm + r0 * ldc, ldc, sm.sl, ldc);
    __syncwarp();  // every lane's reads of those X_lo rows before any lane writes M over them
    store_acc(m, sm.mm + r0 * ldc, ldc);
    if (ws.for_backward) store_acc(m, ws.mm + cc + r0 * kChunk, kChunk);
  }
  __syncthreads();
  {  // the chunk's own logits tril(Q Kᵀ) − tril(Q Wᵀ) M
    float sd[8][4];
    zero(sd);
    mma_ss<BLayout::NK, false, 8, KTD>(sd, sm.q + r0 * ld, ld, sm.k, ld);
    mask_acc(sd, r0, [](int i, int j) { return j <= i; });
    mma_acc<BLayout::KN>(sd, qw, sm.mm, ldc, -1.f);
    store_acc(sd, ws.sd + cc + r0 * kChunk, kChunk);
  }
  {  // K̂ = K − Mᵀ W
    float kh[NTD][4], t[NTD][4];
    load_acc(kh, sm.k + r0 * ld, ld);
    zero(t);
    mma_ss<BLayout::KN, true, NTD, 4>(t, sm.mm + r0, ldc, sm.w, ld);
#pragma unroll
    for (int n = 0; n < NTD; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) kh[n][e] -= t[n][e];
    store_acc(kh, ws.kh + (ptok + r0) * D, D);
  }
}

// ---- forward: one block per query chunk, key chunks scanned leftwards --------------------------------
// Inside the query chunk's own span the queries U cross each key chunk by its rank-64 update; at the
// span's start they are Q⁽ʲ⁾ (U = Q̂ R), so the keys of an earlier span j meet the fixed U as K̄ (moved
// to span j's end), and U crosses the whole span at once: U ← U F_j.

template <typename S, int D>
struct ForwardSmem {
  static constexpr int ld = stride_of<S>(D);
  static constexpr size_t stage_bytes = 2 * staged_bytes<S>(kChunk, D) + 2 * size_t(tile_elems<S>(kChunk, D)) * sizeof(S);
  static constexpr int stages = 2 * stage_bytes <= 113 * 1024 ? 2 : 1;  // keep two blocks per SM
  static constexpr int stage_elems = int(stage_bytes / sizeof(S));
  // F_j (bf16: D rows of stride ld) takes the Y and W slots of an earlier span's first chunk.
  static_assert(kInPlace<S> || D <= 2 * kChunk);
  S *kh, *y, *w, *v;  // stage 0's K̂ (or K̄), Y, W, V tiles of one key chunk; stage s at + s·stage_elems
  float* gate;        // [stages][64]
  size_t bytes;
  __host__ __device__ explicit ForwardSmem(unsigned char* base) {
    SmemCarver c{base};
    S* stage = c.take<S>(stages * stage_elems);
    kh = stage;
    y = kh + staged_bytes<S>(kChunk, D) / sizeof(S);
    w = y + staged_bytes<S>(kChunk, D) / sizeof(S);
    v = w + tile_elems<S>(kChunk, D);
    gate = c.take<float>(stages * kChunk);
    bytes = c.offset;
  }
};

// own_span_only: the cross-span kernel has left each row's softmax over the earlier spans' keys in
// ws.ocross, ws.lsecross; the scan takes it up and visits only the query chunk's own span.
// bf16 at D = 64 is held to 168 registers (no spills), so that three blocks fit on a multiprocessor
// (72.5 KB of shared memory each); 216 registers allowed two.
template <typename S, int D>
__global__ void __launch_bounds__(kThreads, std::is_same_v<S, bf16> && D == 64 ? 3 : 0)
    path_forward_kernel(PathAttentionCudaArgs<S> a, PathWorkspace<S> ws, S* o, float* lse, bool own_span_only) {
  constexpr int NTD = D / 8, KTD = D / 16;
  using Sm = ForwardSmem<S, D>;
  constexpr int ld = Sm::ld, kStages = Sm::stages;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const Sm sm(smem_raw);
  const int T = int(a.length), nch = int(ws.chunks), qb = nch - 1 - int(blockIdx.x), s = int(ws.span_chunks);
  const int q0 = qb * kChunk, r0 = 16 * warp_id(), own_first = qb / s * s;
  const bool split = wgmma::kHasHopperForm<S, D> && own_span_only;  // only the Hopper forms split
  const int last = split ? qb - own_first : qb;                      // the last iteration
  const int64_t bh = blockIdx.y, base = bh * T, pbase = bh * ws.padded;
  const float* gate = a.cum_log_gate ? a.cum_log_gate + base : nullptr;
  auto crosses_span = [&](int kb) { return kb > 0 && kb % s == 0; };  // U ← U F_{kb/s} after chunk kb
  auto span_transform = [&](int kb) { return ws.fspan + (bh * ws.spans + kb / s) * D * D; };

  // Iteration `it` handles key chunk qb − it: first the diagonal chunk, then leftwards.
  auto issue = [&](int it) {
    const int st = it % kStages, kb = qb - it, k0 = kb * kChunk;
    const int so = st * Sm::stage_elems;
    load_tile_async<S, kChunk, D>(sm.v + so, a.v + (base + k0) * D, D, T - k0);
    if (it > 0 && kb >= own_first) {
      load_tile_async<S, kChunk, D>(sm.w + so, a.w + (base + k0) * D, D, T - k0);
      workspace_tile<S, kChunk, D>(sm.kh + so, ws.kh + (pbase + k0) * D);
      workspace_tile<S, kChunk, D>(sm.y + so, ws.y + (pbase + k0) * D);
    } else if (it > 0) {
      workspace_tile<S, kChunk, D>(sm.kh + so, ws.kbar + (pbase + k0) * D);
      if (crosses_span(kb)) workspace_tile<S, D, D>(sm.y + so, span_transform(kb));
    }
    if (gate) load_row_values(sm.gate + st * kChunk, gate + k0, kChunk, T - k0, 0.f);
  };
  auto tile = [&](S* smem, const S* ws_tensor, int64_t row0) -> TileRef<S> {
    if constexpr (kInPlace<S>) return {ws_tensor + row0 * D, D};
    return {smem, ld};
  };
  issue(0);
  cp_async_commit();

  float u[NTD][4];  // the warp's queries, moved to the start of the key chunk being visited
  load_acc(u, ws.qh + (pbase + q0 + r0) * D, D);
  SoftmaxRows<NTD> rows(a.scale, a.gate_scale, gate, q0, T);
  if (split && own_first > 0) rows.resume(ws.ocross + (pbase + q0 + r0) * D, ws.lsecross + pbase + q0 + r0, D);
  for (int it = 0; it <= last; ++it) {
    cp_async_wait<0>();
    __syncthreads();
    if constexpr (kStages == 2) {
      if (it < last) issue(it + 1);
      cp_async_commit();
    }
    const int st = it % kStages, kb = qb - it, k0 = kb * kChunk, so = st * Sm::stage_elems;
    float x[8][4];
    if (it == 0) {
      load_own_logits(x, ws.sd + (bh * nch + qb) * kChunk * kChunk);
    } else if (kb >= own_first) {  // inside the query chunk's span
      const TileRef<S> kh = tile(sm.kh + so, ws.kh, pbase + k0), y = tile(sm.y + so, ws.y, pbase + k0);
      float t[8][4];
      zero(x);
      zero(t);
#pragma unroll
      for (int kt = 0; kt < KTD; ++kt) {
        Frag16<S> f;
        frag_from_acc(f, u, kt);
        mma16<BLayout::NK>(x, f, kh.p, kh.ld, 16 * kt);
        mma16<BLayout::NK>(t, f, sm.w + so, ld, 16 * kt);
      }
      if (kb > 0) mma_acc<BLayout::KN>(u, t, y.p, y.ld, -1.f);  // U ← U (I − Wᵀ X W)
    } else {  // an earlier span: logits U K̄ᵀ, then U ← U F_j past the span's first chunk
      const TileRef<S> kbar = tile(sm.kh + so, ws.kbar, pbase + k0);
      zero(x);
      mma_acc<BLayout::NK>(x, u, kbar.p, kbar.ld);
      if (crosses_span(kb)) {
        const TileRef<S> f = tile(sm.y + so, span_transform(kb), 0);
        multiply_square(u, f.p, f.ld);
      }
    }
    rows.weigh(x, it == 0, gate ? sm.gate + st * kChunk : nullptr);
    mma_acc<BLayout::KN>(rows.o, x, sm.v + so, ld);
    if constexpr (kStages == 1) {
      __syncthreads();
      if (it < last) issue(it + 1);
      cp_async_commit();
    }
  }
  const int row0 = q0 + r0;
  rows.store(o + (base + row0) * D, lse + base + row0, D, T - row0);
}

}  // namespace

template <typename S>
size_t path_attention_forward_workspace_bytes(const PathAttentionCudaArgs<S>& a) {
  check_attention_shape(a.batch_heads, a.length, a.head_dim, "path_attention_forward (cuda)");
  return PathWorkspace<S>(a).carve_forward(nullptr, a);
}

template <typename S>
void path_attention_forward(const PathAttentionCudaArgs<S>& a, S* o, float* lse, Workspace ws, cudaStream_t stream) {
  check_path_args(a, "path_attention_forward (cuda)");
  PathWorkspace<S> w(a);
  check_workspace(ws, w.carve_forward(ws.data, a), "path_attention_forward (cuda)");  // carving reads nothing
  const dim3 grid(unsigned(w.chunks), unsigned(a.batch_heads));
  with_head_dim(a.head_dim, [&]<int D>() {
    launch_kernel(path_prep_kernel<S, D>, grid, PrepSmem<S, D>(nullptr).bytes, stream, "path_prep_kernel", a, w);
  });
  launch_path_span_transforms(a, w, stream);
  launch_path_key_movers(a, w, stream);
  with_head_dim(a.head_dim, [&]<int D>() {
    bool own_span_only = false;  // set where the cross-span pass is queued (it stores Q⁽ʲ⁾ too)
    if constexpr (wgmma::kHasHopperForm<S, D>) {
      if (w.cross_span_room && choose_hopper_form()) {
        const dim3 later(unsigned(w.chunks - w.span_chunks), unsigned(a.batch_heads));  // query chunks after span 0
        launch_kernel(cross_span::path_cross_span_forward_hopper_kernel<D>, later,
                      cross_span::CrossSpanTiles<D>::bytes, stream, "path_cross_span_forward_hopper_kernel", a, w);
        own_span_only = true;
      }
    }
    if (a.for_backward && !own_span_only) launch_path_query_movers(a, w, stream);
    launch_kernel(path_forward_kernel<S, D>, grid, ForwardSmem<S, D>(nullptr).bytes, stream, "path_forward_kernel", a,
                  w, o, lse, own_span_only);
  });
}

#define PATHBENCH_INSTANTIATE(S)                                                               \
  template size_t path_attention_forward_workspace_bytes<S>(const PathAttentionCudaArgs<S>&); \
  template void path_attention_forward<S>(const PathAttentionCudaArgs<S>&, S*, float*, Workspace, cudaStream_t);
PATHBENCH_INSTANTIATE(float)
PATHBENCH_INSTANTIATE(bf16)
#undef PATHBENCH_INSTANTIATE

}  // namespace pathbench::cuda
