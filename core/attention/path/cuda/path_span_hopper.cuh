// PaTH's span kernels on Hopper (sm_90a, bf16, D = 64 or 128), all but the query chain (whose wgmma
// form timed the same as its portable one, cuda-attention-notes v35) and the query movers (the
// forward's cross-span pass does their work on Hopper): path_span.cu's algorithm with
// the products as warpgroup products over swizzled tiles. The key movers take the keys from
// registers and load each step's tiles while the step before it multiplies (two stages); the span
// transforms and gradients keep their D × D matrix in registers, one warpgroup per 64 of its rows.
#pragma once
#include "core/attention/cuda/wgmma.cuh"
#include "core/attention/path/cuda/path_workspace.cuh"

namespace pathbench::cuda::span_hopper {

using namespace tiles;

// u ← u − (u Wᵀ) Y for the warpgroup's 64 rows u (accumulator layout, D columns) and swizzled [64, D]
// tiles W and Y: a key state crossing a chunk (Y = Xᵀ W) or R crossing one (Y = X W). u Wᵀ takes u
// from registers, or from u_tile (u as bf16, stored by every warp before a barrier) where given.
template <int D>
__device__ __forceinline__ void cross_chunk_hopper(float (&u)[D / 8][4], const bf16* w, const bf16* y,
                                                   const bf16* u_tile = nullptr) {
  float t[8][4];
  if (u_tile) {
    wgmma::rows_by_rows<D>(t, u_tile, w);
  } else {
    Frag16<bf16> fu[D / 16];
    wgmma::to_fragments(fu, u);
    wgmma::arrive();
    wgmma::issue_regs_by_rows<D>(t, fu, w);
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(t);
    wgmma::fence_operands(fu);
  }
  negate(t);
  wgmma::add_regs_by_tile<D>(u, t, y);
}

// Stores this warp's 16 rows (row0 …, D columns) of a D × D matrix into its swizzled bf16 [D, D] tile.
template <int D>
__device__ __forceinline__ void store_square_rows(float (&acc)[D / 8][4], bf16* square, int row0) {
#pragma unroll
  for (int h = 0; h < D / wgmma::kPanelCols; ++h)
    wgmma::store_acc<D>(wgmma::panel(acc, h), square + h * D * wgmma::kPanelCols, row0);
}

// Column panel `panel` of −X M for a K-major [64, D] tile x and a swizzled [D, D] tile m (read
// MN-major), stored into the same panel of the [64, D] tile out; the warpgroup's four warps take its
// 64 rows.
template <int D>
__device__ __forceinline__ void store_negated_panel(bf16* out, const bf16* x, const bf16* m, int panel) {
  float t[8][4];
  wgmma::arrive();
#pragma unroll
  for (int kt = 0; kt < D / 16; ++kt)
    wgmma::mma_ss<0, 1>(t, wgmma::k_major<kChunk>(x, kt), wgmma::mn_major<D>(m, panel, kt), kt > 0);
  wgmma::commit();
  wgmma::wait<0>();
  wgmma::fence_operands(t);
  negate(t);
  wgmma::store_acc<kChunk>(t, out + panel * kChunk * wgmma::kPanelCols, 16 * (warp_id() % 4));
}

template <int D>
struct GradientHopperLayout {
  static constexpr int tile = wgmma::tile_bytes(kChunk, D), square = wgmma::tile_bytes(D, D);
  // R_m and A (bf16) [D, D], then W_m, Y_m, Q̂_m, G_m (bf16) and −W_m A [64, D]
  static constexpr int r = 0, a = square, w = 2 * square, y = w + tile, q = y + tile, g = q + tile, t = g + tile;
  static constexpr size_t bytes = t + tile + wgmma::kSwizzleBytes;
  static constexpr int threads = D / wgmma::kPanelCols * kThreads;  // a warpgroup per 64 rows of A
};

// One block per span j = blockIdx.x + 1 (chunks first … end − 1) of slice blockIdx.y: with A the
// gradient of R_{m+1} (A = dF_j at the span's end), walking m = end − 1 … first: dP_m += A R_mᵀ, then
// A ← P_mᵀ A + Q̂_mᵀ G_m = A − Y_mᵀ (W_m A) + Q̂_mᵀ G_m. Warpgroup g keeps rows 64g … of A in registers
// (its dP_m rows from A's fragments against R_m read K-major) and computes column panel g of W_m A
// from A's bf16 tile; warpgroup 0 loads the tiles.
template <int D>
__global__ void __launch_bounds__(GradientHopperLayout<D>::threads)
    path_span_gradients_hopper_kernel(PathAttentionCudaArgs<bf16> a, PathWorkspace<bf16> ws) {
#if PATHBENCH_SM90A_DEVICE
  using L = GradientHopperLayout<D>;
  constexpr int NTD = D / 8, kGroups = D / wgmma::kPanelCols;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = wgmma::align_to_swizzle(smem_raw);
  auto at = [smem](int offset) { return reinterpret_cast<bf16*>(smem + offset); };
  bf16 *sr = at(L::r), *sa = at(L::a);                                            // [D, D]
  bf16 *sw = at(L::w), *sy = at(L::y), *sq = at(L::q), *sg = at(L::g), *st = at(L::t);  // [64, D]
  const SpanBlock sp(a, ws);
  const int T = int(a.length), nch = int(ws.chunks), j = sp.j;
  const int64_t bh = sp.bh, base = sp.base, pbase = sp.pbase;
  const int group = warp_id() / 4, row0 = wgmma::kPanelCols * group + 16 * (warp_id() % 4);  // this warp's rows of A
  const float* span_start_gradient = ws.gstart + bh * ws.padded * D;  // G of its queries

  float acc_a[NTD][4];
  load_acc(acc_a, ws.dfspan + ((bh * ws.spans + j) * D + row0) * D, D);
  for (int m = sp.end - 1; m >= sp.first; --m) {
    const int m0 = m * kChunk;
    const bool last_step = m == sp.first;  // only dP_m is left to do
    float dp[NTD][4];  // dP_m, this warp's rows: loaded first, so that its latency overlaps the copies'
    float* dst = ws.dpm + ((bh * nch + m) * D + row0) * D;
    load_acc(dp, dst, D);
    if (group == 0) {
      wgmma::load_tile_async<D, D>(sr, ws.prefix + (bh * nch + m) * D * D, D, D);
      if (!last_step) {
        wgmma::load_tile_async<kChunk, D>(sw, a.w + (base + m0) * D, D, T - m0);
        wgmma::load_tile_async<kChunk, D>(sy, ws.y + (pbase + m0) * D, D, kChunk);
        wgmma::load_tile_async<kChunk, D>(sq, ws.qh + (pbase + m0) * D, D, kChunk);
      }
      cp_async_commit();
      if (!last_step) wgmma::store_float_tile<kChunk, D>(sg, span_start_gradient + m0 * D);
      cp_async_wait<0>();
    }
    store_square_rows<D>(acc_a, sa, row0);
    wgmma::fence_shared_for_tensor_cores();
    __syncthreads();
    {  // dP_m += A R_mᵀ, this warp's rows
      Frag16<bf16> fa[D / 16];
      wgmma::to_fragments(fa, acc_a);
      wgmma::fence_operands(dp);
      wgmma::arrive();
      wgmma::issue_regs_by_square_t<D>(dp, fa, sr);
      wgmma::commit();
      wgmma::wait<0>();
      wgmma::fence_operands(dp);
      wgmma::fence_operands(fa);
      store_acc(dp, dst, D);
    }
    if (last_step) break;
    store_negated_panel<D>(st, sw, sa, group);  // −W_m A
    wgmma::fence_shared_for_tensor_cores();
    __syncthreads();
    // A ← A − Y_mᵀ (W_m A) + Q̂_mᵀ G_m, this warpgroup's rows (panel `group` of Y_m and Q̂_m, read M-major)
    wgmma::fence_operands(acc_a);
    wgmma::arrive();
#pragma unroll
    for (int h = 0; h < kGroups; ++h) {
      wgmma::issue_tile_by_tile(wgmma::panel(acc_a, h), sy, st, h, group, true);
      wgmma::issue_tile_by_tile(wgmma::panel(acc_a, h), sq, sg, h, group, true);
    }
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(acc_a);
    __syncthreads();  // every product is done before the next step's tiles arrive
  }
#else
  __trap();  // launched only where hopper_kernels() holds
#endif
}

template <int D>
struct KeyMoverHopperLayout {
  static constexpr int tile = wgmma::tile_bytes(kChunk, D);
  static constexpr size_t bytes = 4 * size_t(tile) + wgmma::kSwizzleBytes;  // two stages of W_m, Xᵀ W_m [64, D]
};

// Key chunk x (blockIdx.x) to its span's end: K̄. Its chunk crossings u − (u Wᵀ) Xᵀ W take u from
// registers; each step's W and Xᵀ W load while the step before crosses (two stages of two tiles).
template <int D>
__global__ void __launch_bounds__(kThreads)
    path_key_movers_hopper_kernel(PathAttentionCudaArgs<bf16> a, PathWorkspace<bf16> ws) {
#if PATHBENCH_SM90A_DEVICE
  constexpr int NTD = D / 8, kTile = KeyMoverHopperLayout<D>::tile;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = wgmma::align_to_swizzle(smem_raw);
  auto stage_w = [smem](int i) { return reinterpret_cast<bf16*>(smem + (i & 1) * 2 * kTile); };          // [64, D]
  auto stage_y = [smem](int i) { return reinterpret_cast<bf16*>(smem + (i & 1) * 2 * kTile + kTile); };  // [64, D]
  const int T = int(a.length), x = int(blockIdx.x), s = int(ws.span_chunks), r0 = 16 * warp_id();
  const int steps = min((x / s + 1) * s, int(ws.chunks)) - x - 1;  // the chunks after x in its span
  const int64_t bh = blockIdx.y, base = bh * a.length, pbase = bh * ws.padded, row = pbase + x * kChunk + r0;
  auto issue = [&](int i) {  // chunk x + 1 + i
    const int m0 = (x + 1 + i) * kChunk;
    wgmma::load_tile_async<kChunk, D>(stage_w(i), a.w + (base + m0) * D, D, T - m0);
    wgmma::load_tile_async<kChunk, D>(stage_y(i), ws.yp + (pbase + m0) * D, D, kChunk);
  };
  if (steps > 0) issue(0);
  cp_async_commit();

  float u[NTD][4];
  load_acc(u, ws.kh + row * D, D);
  for (int i = 0; i < steps; ++i) {
    wgmma::next_stage(i + 1 < steps, [&] { issue(i + 1); });
    cross_chunk_hopper<D>(u, stage_w(i), stage_y(i));
  }
  store_acc(u, ws.kbar + row * D, D);
#else
  __trap();  // launched only where hopper_kernels() holds
#endif
}

template <int D>
struct TransformHopperLayout {
  static constexpr int tile = wgmma::tile_bytes(kChunk, D), square = wgmma::tile_bytes(D, D);
  static constexpr int r = 0, w = square, y = w + tile, t = y + tile;  // R (bf16) [D, D]; W_m, Y_m, −Y_m R [64, D]
  static constexpr size_t bytes = t + tile + wgmma::kSwizzleBytes;
  static constexpr int threads = D / wgmma::kPanelCols * kThreads;  // a warpgroup per 64 rows of R
};

// One block per span j = blockIdx.x + 1 (chunks first … end − 1) of slice blockIdx.y: R starts as I and
// takes R ← P_m R = R − W_mᵀ (Y_m R) for m = first … end − 1, storing each R_m (before P_m, for the
// backward) and F_j = R at the end. Warpgroup g keeps rows 64g … of R in registers and computes
// column panel g of Y_m R from R's bf16 tile; warpgroup 0 loads the tiles.
template <int D>
__global__ void __launch_bounds__(TransformHopperLayout<D>::threads)
    path_span_transforms_hopper_kernel(PathAttentionCudaArgs<bf16> a, PathWorkspace<bf16> ws) {
#if PATHBENCH_SM90A_DEVICE
  using L = TransformHopperLayout<D>;
  constexpr int NTD = D / 8, kGroups = D / wgmma::kPanelCols;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = wgmma::align_to_swizzle(smem_raw);
  auto at = [smem](int offset) { return reinterpret_cast<bf16*>(smem + offset); };
  bf16 *sr = at(L::r), *sw = at(L::w), *sy = at(L::y), *st = at(L::t);
  const SpanBlock sp(a, ws);
  const int T = int(a.length), nch = int(ws.chunks);
  const int64_t bh = sp.bh;
  const int group = warp_id() / 4, row0 = wgmma::kPanelCols * group + 16 * (warp_id() % 4);  // this warp's rows of R

  float acc_r[NTD][4];
#pragma unroll
  for (int n = 0; n < NTD; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_r[n][e] = row0 + acc_row(e) == acc_col(n, e) ? 1.f : 0.f;
  for (int m = sp.first; m < sp.end; ++m) {
    const int m0 = m * kChunk;
    if (group == 0) {
      wgmma::load_tile_async<kChunk, D>(sw, a.w + (sp.base + m0) * D, D, T - m0);
      wgmma::load_tile_async<kChunk, D>(sy, ws.y + (sp.pbase + m0) * D, D, kChunk);
      cp_async_commit();
    }
    if (ws.for_backward) store_acc(acc_r, ws.prefix + ((bh * nch + m) * D + row0) * D, D);
    store_square_rows<D>(acc_r, sr, row0);
    if (group == 0) cp_async_wait<0>();
    wgmma::fence_shared_for_tensor_cores();
    __syncthreads();
    store_negated_panel<D>(st, sy, sr, group);  // −Y_m R
    wgmma::fence_shared_for_tensor_cores();
    __syncthreads();
    // R ← R − W_mᵀ (Y_m R), this warpgroup's rows (panel `group` of W_m, read M-major)
    wgmma::fence_operands(acc_r);
    wgmma::arrive();
#pragma unroll
    for (int h = 0; h < kGroups; ++h) wgmma::issue_tile_by_tile(wgmma::panel(acc_r, h), sw, st, h, group, true);
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(acc_r);
    __syncthreads();  // every product is done before the next chunk's tiles arrive
  }
  store_acc(acc_r, ws.fspan + ((bh * ws.spans + sp.j) * D + row0) * D, D);
#else
  __trap();  // launched only where hopper_kernels() holds
#endif
}

}  // namespace pathbench::cuda::span_hopper
