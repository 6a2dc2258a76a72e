// PaTH's query movers, query chain and span gradients on Hopper (sm_90a, bf16, D = 64 or 128):
// path_span.cu's algorithm with the D × D products as warpgroup products over swizzled tiles. The
// movers and the chain take the queries (or their gradients) from registers against [D, D] tiles
// and load each step's matrix while the step before it multiplies (two stages); the span gradients
// keep their D × D gradient A in registers, one warpgroup per 64 of its rows.
#pragma once
#include "core/attention/cuda/wgmma.cuh"
#include "core/attention/path/cuda/path_workspace.cuh"

namespace pathbench::cuda::span_hopper {

using namespace tiles;

template <int D>
struct MoverHopperLayout {
  static constexpr int square = wgmma::tile_bytes(D, D);  // a swizzled [D, D] tile
  static constexpr size_t bytes = 2 * size_t(square) + wgmma::kSwizzleBytes;  // two stages
};

// u ← u·M from registers for a swizzled [D, D] tile m (MN-major), waited for.
template <int D>
__device__ __forceinline__ void multiply_square_hopper(float (&u)[D / 8][4], const bf16* m) {
  Frag16<bf16> fu[D / 16];
  wgmma::to_fragments(fu, u);
  wgmma::fence_operands(u);
  wgmma::arrive();
  wgmma::issue_regs_by_square<D>(u, fu, m, false);
  wgmma::commit();
  wgmma::wait<0>();
  wgmma::fence_operands(u);
  wgmma::fence_operands(fu);
}

// Query chunk x = s + blockIdx.x (after span 0) to the end of every earlier span: Q⁽ʲ⁾, its dQ⁽ʲ⁾
// rows zeroed. Its matrices in the order they multiply: R_x (unless x starts its span), then
// F_{span−1}, …, F_1.
template <int D>
__global__ void __launch_bounds__(kThreads)
    path_query_movers_hopper_kernel(PathAttentionCudaArgs<bf16> a, PathWorkspace<bf16> ws) {
#if PATHBENCH_SM90A_DEVICE
  constexpr int NTD = D / 8;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = wgmma::align_to_swizzle(smem_raw);
  auto stage = [smem](int i) { return reinterpret_cast<bf16*>(smem + (i & 1) * MoverHopperLayout<D>::square); };
  const int s = int(ws.span_chunks), x = s + int(blockIdx.x), span = x / s, r0 = 16 * warp_id();
  const int64_t bh = blockIdx.y, row = bh * ws.padded + x * kChunk + r0;
  const int prefix = x > span * s ? 1 : 0, steps = prefix + span - 1;
  auto issue = [&](int i) {
    const bf16* m = i < prefix ? ws.prefix + (bh * ws.chunks + x) * D * D
                               : ws.fspan + (bh * ws.spans + span - 1 - (i - prefix)) * D * D;
    wgmma::load_tile_async<D, D>(stage(i), m, D, D);
  };
  if (steps > 0) issue(0);
  cp_async_commit();

  float u[NTD][4];
  load_acc(u, ws.qh + row * D, D);  // to its span's start = span − 1's end: Q̂ R_x
  int step = 0;
  auto multiply = [&] {
    wgmma::next_stage(step + 1 < steps, [&] { issue(step + 1); });
    multiply_square_hopper<D>(u, stage(step));
    ++step;
  };
  if (prefix) multiply();
  float zeros[NTD][4];
  zero(zeros);
  for (int j = span - 1;; --j) {
    const int64_t at = (bh * ws.spans + j) * ws.padded + x * kChunk + r0;
    store_acc(u, ws.qspan + at * D, D);
    store_acc(zeros, ws.dqspan + at * D, D);
    if (j == 0) break;
    multiply();
  }
#else
  __trap();  // launched only where hopper_kernels() holds
#endif
}

template <int D>
struct ChainHopperLayout {
  static constexpr int tile = wgmma::tile_bytes(kChunk, D), square = wgmma::tile_bytes(D, D);
  static constexpr int stage_bytes = tile + square;  // Q⁽ʲ⁾ [64, D], then F_j [D, D]
  static constexpr size_t bytes = 2 * size_t(stage_bytes) + tile + wgmma::kSwizzleBytes;  // two stages, then G
};

// One block per query chunk b after span 0 (the chunks with the longest walks first): path_span.cu's
// query chain. The warpgroup's 64 rows of G stay in registers; G as bf16 goes to shared memory for
// dF_j += Q⁽ʲ⁾ᵀ G (both read M- or N-major, with atomics), and G's own step G ← dQ⁽ʲ⁾ + G F_jᵀ takes
// G from registers and F_j K-major.
template <int D>
__global__ void __launch_bounds__(kThreads)
    path_query_chain_hopper_kernel(PathAttentionCudaArgs<bf16> a, PathWorkspace<bf16> ws) {
#if PATHBENCH_SM90A_DEVICE
  using L = ChainHopperLayout<D>;
  constexpr int NTD = D / 8, kPanels = D / wgmma::kPanelCols;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = wgmma::align_to_swizzle(smem_raw);
  auto stage_q = [smem](int j) { return reinterpret_cast<bf16*>(smem + (j & 1) * L::stage_bytes); };
  auto stage_f = [smem](int j) { return reinterpret_cast<bf16*>(smem + (j & 1) * L::stage_bytes + L::tile); };
  bf16* sg = reinterpret_cast<bf16*>(smem + 2 * L::stage_bytes);  // [64, D] G
  const int s = int(ws.span_chunks), nch = int(ws.chunks), r0 = 16 * warp_id();
  const int b = nch - 1 - int(blockIdx.x), span = b / s, b0 = b * kChunk;
  const int64_t bh = blockIdx.y, pbase = bh * ws.padded;
  auto span_rows = [&](int j) { return ((bh * ws.spans + j) * ws.padded + b0) * D; };
  auto issue = [&](int j) {  // step j's Q⁽ʲ⁾ and F_j
    wgmma::load_tile_async<kChunk, D>(stage_q(j), ws.qspan + span_rows(j), D, kChunk);
    wgmma::load_tile_async<D, D>(stage_f(j), ws.fspan + (bh * ws.spans + j) * D * D, D, D);
  };
  if (span > 1) issue(1);
  cp_async_commit();

  // Across the earlier spans: G⁽⁰⁾ = dQ⁽⁰⁾, G⁽ʲ⁾ = dQ⁽ʲ⁾ + G⁽ʲ⁻¹⁾ F_jᵀ, dF_j += Q⁽ʲ⁾ᵀ G⁽ʲ⁻¹⁾.
  float g[NTD][4];
  load_acc(g, ws.dqspan + span_rows(0) + r0 * D, D);
  for (int j = 1; j < span; ++j) {
    wgmma::next_stage(j + 1 < span, [&] { issue(j + 1); });
#pragma unroll
    for (int h = 0; h < kPanels; ++h) wgmma::store_acc<kChunk>(wgmma::panel(g, h), sg + h * kChunk * wgmma::kPanelCols, r0);
    wgmma::fence_shared_for_tensor_cores();
    __syncthreads();
    Frag16<bf16> fg[D / 16];
    wgmma::to_fragments(fg, g);
    load_acc(g, ws.dqspan + span_rows(j) + r0 * D, D);
    wgmma::fence_operands(g);
    wgmma::arrive();
    wgmma::issue_regs_by_square_t<D>(g, fg, stage_f(j), true);
    wgmma::commit();
    float* df = ws.dfspan + (bh * ws.spans + j) * D * D;
#pragma unroll 1
    for (int m = 0; m < kPanels; ++m)
#pragma unroll 1
      for (int h = 0; h < kPanels; ++h) {  // rows 64m + r0 …, columns 64h … of dF_j
        float acc[8][4];
        wgmma::tile_by_tile(acc, stage_q(j), sg, h, m);  // waits for G's step too
        atomic_add_acc(acc, df + (wgmma::kPanelCols * m + r0) * D + h * wgmma::kPanelCols, D);
      }
    wgmma::fence_operands(g);
    wgmma::fence_operands(fg);
    __syncthreads();  // every warp's products have read this stage and G's tile
  }
  // G is now the gradient of the chunk's queries at their span's start, Q̂_b R_b: dQ̂_b += G R_bᵀ (the
  // in-span pairs added theirs before), and G replaces dQ⁽ˢᵖᵃⁿ⁻¹⁾ for the span gradients' dR_b = Q̂_bᵀ G.
  float dqh[NTD][4];
  float* out = ws.dqh + (pbase + b0 + r0) * D;
  load_acc(dqh, out, D);
  if (b == span * s) {  // R_b = I
    add_into(dqh, g);
  } else {
    store_acc(g, ws.dqspan + span_rows(span - 1) + r0 * D, D);
    wgmma::load_tile_async<D, D>(stage_f(0), ws.prefix + (bh * nch + b) * D * D, D, D);
    cp_async_commit();
    cp_async_wait<0>();
    wgmma::fence_shared_for_tensor_cores();
    __syncthreads();
    Frag16<bf16> fg[D / 16];
    wgmma::to_fragments(fg, g);
    wgmma::fence_operands(dqh);
    wgmma::arrive();
    wgmma::issue_regs_by_square_t<D>(dqh, fg, stage_f(0), true);
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(dqh);
    wgmma::fence_operands(fg);
  }
  store_acc(dqh, out, D);
#else
  __trap();  // launched only where hopper_kernels() holds
#endif
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
  const int T = int(a.length), nch = int(ws.chunks), s = int(ws.span_chunks);
  const int group = warp_id() / 4, row0 = wgmma::kPanelCols * group + 16 * (warp_id() % 4);  // this warp's rows of A
  const int j = int(blockIdx.x) + 1, first = j * s, end = min(first + s, nch);
  const int64_t bh = blockIdx.y, base = bh * T, pbase = bh * ws.padded;
  const float* span_start_gradient = ws.dqspan + (bh * ws.spans + j - 1) * ws.padded * D;  // G of its queries

  float acc_a[NTD][4];
  load_acc(acc_a, ws.dfspan + ((bh * ws.spans + j) * D + row0) * D, D);
  for (int m = end - 1; m >= first; --m) {
    const int m0 = m * kChunk;
    const bool last_step = m == first;  // only dP_m is left to do
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
#pragma unroll
    for (int h = 0; h < kGroups; ++h)
      wgmma::store_acc<D>(wgmma::panel(acc_a, h), sa + h * D * wgmma::kPanelCols, row0);
    wgmma::fence_shared_for_tensor_cores();
    __syncthreads();
    {  // dP_m += A R_mᵀ, this warp's rows
      float dp[NTD][4];
      float* dst = ws.dpm + ((bh * nch + m) * D + row0) * D;
      load_acc(dp, dst, D);
      Frag16<bf16> fa[D / 16];
      wgmma::to_fragments(fa, acc_a);
      wgmma::fence_operands(dp);
      wgmma::arrive();
      wgmma::issue_regs_by_square_t<D>(dp, fa, sr, true);
      wgmma::commit();
      wgmma::wait<0>();
      wgmma::fence_operands(dp);
      wgmma::fence_operands(fa);
      store_acc(dp, dst, D);
    }
    if (last_step) break;
    {  // −W_m A, column panel `group`
      float t[8][4];
      wgmma::arrive();
#pragma unroll
      for (int kt = 0; kt < D / 16; ++kt)
        wgmma::mma_ss<0, 1>(t, wgmma::k_major<kChunk>(sw, kt), wgmma::mn_major<D>(sa, group, kt), kt > 0);
      wgmma::commit();
      wgmma::wait<0>();
      wgmma::fence_operands(t);
      negate(t);
      wgmma::store_acc<kChunk>(t, st + group * kChunk * wgmma::kPanelCols, row0 - wgmma::kPanelCols * group);
    }
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

}  // namespace pathbench::cuda::span_hopper
