// PaTH's per-chunk backward, part b, on Hopper (sm_90a, bf16, D = 64 or 128): path_local_b.cuh's
// kernel with every product a warpgroup product over swizzled tiles (wgmma.cuh). Z and dSL, dG enter
// the products that follow them from registers; every other operand is read from shared memory,
// K-major or MN-major as it lies. Products with X and A⁻¹ take both bf16 parts, and dX is split the
// same way (path_local_b.cuh says why). X and strict_lower(W Kᵀ) are formed here from A⁻¹ and from
// W, K (form_x, one product). dG takes dM's tile once dM's last product is done. The steps after the
// loads (local_b_hopper_steps) also serve the fused per-chunk kernel (path_local_ab_hopper.cuh).
#pragma once
#include "core/attention/cuda/wgmma.cuh"
#include "core/attention/path/cuda/path_local_b.cuh"

namespace pathbench::cuda::local_b {

// Byte offsets of the swizzled tiles from the aligned start of shared memory: W, K, dY [64, D], then
// X_hi, X_lo, A⁻¹_hi, A⁻¹_lo, SL, dM (then dG), dSL, dX_hi, dX_lo [64, 64], then β. D = 64: 96 KB
// (two blocks per multiprocessor); D = 128: 120 KB (one).
template <int D>
struct LocalBHopperLayout {
  static constexpr int tile = wgmma::tile_bytes(kChunk, D), square = wgmma::tile_bytes(kChunk, kChunk);
  static constexpr int w = 0, k = tile, dy = 2 * tile, x = 3 * tile, xlo = x + square, ainv = xlo + square;
  static constexpr int ainvlo = ainv + square, sl = ainvlo + square, dm = sl + square, dsl = dm + square;
  static constexpr int dx = dsl + square, dxlo = dx + square, beta = dxlo + square;
  static constexpr size_t bytes = beta + kChunk * sizeof(float) + wgmma::kSwizzleBytes;
  static_assert(tile % wgmma::kSwizzleBytes == 0 && square % wgmma::kSwizzleBytes == 0, "tiles on swizzle boundaries");
};

// Stores the warp's 16 accumulator rows (16w …) into rows row0 … of swizzled [64, 64] tiles as
// hi = bf16(x) and lo = bf16(x − hi) (store_split_pair).
__device__ __forceinline__ void store_acc_split_swizzled(const float (&acc)[8][4], bf16* hi, bf16* lo, int row0) {
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; e += 2) {
      const int at = wgmma::swizzled_offset(kChunk, row0 + acc_row(e), acc_col(n, e)) / int(sizeof(bf16));
      store_split_pair(hi + at, lo + at, acc[n][e], acc[n][e + 1]);
    }
}

// The swizzled tiles of local b's steps: W, K, dY [64, D], A⁻¹ (both parts) and dM [64, 64] filled on
// entry; X (both parts), SL, dSL and dX (both parts) [64, 64] their own places, except that dX_hi may
// take SL's; dG takes dM's.
struct LocalBHopperTiles {
  bf16 *w, *k, *dy, *ainv, *ainvlo, *dm, *x, *xlo, *sl, *dsl, *dx, *dxlo;
  float* beta;  // [64] the chunk's β, zeros past the sequence's end
};

// Local b for one chunk once its input tiles are in place (fenced for the tensor cores, a barrier
// passed): dβ, dk = start + dSLᵀ W and dw = start + dSL K + Xᵀ dY + dG W + dGᵀ W, stored from the
// chunk's first row of dk, dw and dbeta (rows below `valid`). start_dk(h, acc) fills this warp's 16
// rows, columns 64h …, of dk's start; start_dw(acc) all D columns of dw's. The whole block.
template <int D, class StartDk, class StartDw>
__device__ __forceinline__ void local_b_hopper_steps(const LocalBHopperTiles& t, int valid, bf16* dk, bf16* dw,
                                                     float* dbeta, StartDk start_dk, StartDw start_dw) {
  constexpr int NTD = D / 8, kPanels = D / wgmma::kPanelCols, kCols = wgmma::kPanelCols;
  const int r0 = 16 * warp_id();
  {  // strict_lower(W Kᵀ), this warp's rows, while X is formed
    float sl[8][4];
    wgmma::arrive();
    wgmma::issue_rows_by_rows<D>(sl, t.w, t.k);
    wgmma::commit();
    auto swizzled = [](int r, int c) { return wgmma::swizzled_offset(kChunk, r, c) / int(sizeof(bf16)); };
    form_x(t.ainv, t.ainvlo, t.x, t.xlo, t.beta, swizzled, swizzled);
    wgmma::wait<0>();
    wgmma::fence_operands(sl);
    mask_acc(sl, r0, [](int i, int j) { return j < i; });
    wgmma::store_acc<kChunk>(sl, t.sl, r0);
  }
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();

  // dX = tril(dM SLᵀ + dY Wᵀ) and dSL = strict_lower(Xᵀ dM), rows r0 …
  float dx[8][4], dsl[8][4];
  wgmma::arrive();
  wgmma::issue_rows_by_rows<kChunk>(dx, t.dm, t.sl);
  wgmma::issue_rows_by_rows<D>(dx, t.dy, t.w, true);
  wgmma::issue_tile_by_tile(dsl, t.x, t.dm, 0);
  wgmma::issue_tile_by_tile(dsl, t.xlo, t.dm, 0, 0, true);
  wgmma::commit();
  wgmma::wait<0>();
  wgmma::fence_operands(dx);
  wgmma::fence_operands(dsl);
  mask_acc(dx, r0, [](int i, int j) { return j <= i; });
  __syncthreads();  // every warp's products have read SL, whose place dX may take
  store_acc_split_swizzled(dx, t.dx, t.dxlo, r0);
  mask_acc(dsl, r0, [](int i, int j) { return j < i; });
  wgmma::store_acc<kChunk>(dsl, t.dsl, r0);
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();
  // Z = A⁻ᵀ dX, this warp's rows (rows past the sequence's end have β = 0, so A⁻¹'s rows and
  // columns there are those of I: they keep Z = dX and change no other row), and this warp's rows
  // of G = W Wᵀ (the prep's product, recomputed).
  float z[8][4], gram[8][4];
  wgmma::arrive();
  wgmma::issue_tile_by_tile(z, t.ainv, t.dx, 0);
  wgmma::issue_tile_by_tile(z, t.ainv, t.dxlo, 0, 0, true);
  wgmma::issue_tile_by_tile(z, t.ainvlo, t.dx, 0, 0, true);
  wgmma::issue_rows_by_rows<D>(gram, t.w, t.w);
  wgmma::commit();
  wgmma::wait<0>();
  wgmma::fence_operands(z);
  wgmma::fence_operands(gram);
  float dga[8][4];  // dA = strict_lower(−Z Xᵀ), then dG = diag(β) dA
  {
    Frag16<bf16> fz[4];
    wgmma::to_fragments(fz, z);
    wgmma::arrive();
    wgmma::issue_regs_by_rows<kChunk>(dga, fz, t.x);
    wgmma::issue_regs_by_rows<kChunk>(dga, fz, t.xlo, true);
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(dga);
    wgmma::fence_operands(fz);
  }
  mask_acc(dga, r0, [](int i, int j) { return j < i; });
  negate(dga);
  store_beta_gradient(dbeta + r0, dga, z, gram, t.beta, r0, valid - r0);
  wgmma::store_acc<kChunk>(dga, t.dm, r0);  // over dM, whose last products came before the barrier
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();
#pragma unroll 1
  for (int h = 0; h < kPanels; ++h) {  // dk = dk(part) + dSLᵀ W, rows r0 …, columns 64h …
    float acc[8][4];
    start_dk(h, acc);
    wgmma::tile_by_tile(acc, t.dsl, t.w, h, 0, true);
    store_acc(acc, dk + r0 * D + h * kCols, D, valid - r0);
  }
  {  // dw = start + dSL K + Xᵀ dY + dG W + dGᵀ W
    float acc[NTD][4];
    start_dw(acc);
    Frag16<bf16> fdsl[4], fdg[4];
    wgmma::to_fragments(fdsl, dsl);
    wgmma::to_fragments(fdg, dga);
    wgmma::fence_operands(acc);
    wgmma::arrive();
    wgmma::issue_regs_by_tile<D>(acc, fdsl, t.k);
    wgmma::issue_regs_by_tile<D>(acc, fdg, t.w);
#pragma unroll
    for (int h = 0; h < kPanels; ++h) {
      wgmma::issue_tile_by_tile(wgmma::panel(acc, h), t.x, t.dy, h, 0, true);
      wgmma::issue_tile_by_tile(wgmma::panel(acc, h), t.xlo, t.dy, h, 0, true);
      wgmma::issue_tile_by_tile(wgmma::panel(acc, h), t.dm, t.w, h, 0, true);
    }
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(acc);
    wgmma::fence_operands(fdsl);
    wgmma::fence_operands(fdg);
    store_acc(acc, dw + r0 * D, D, valid - r0);
  }
}

template <int D>
__global__ void __launch_bounds__(kThreads)
    path_local_b_hopper_kernel(PathAttentionCudaArgs<bf16> a, PathWorkspace<bf16> ws, bf16* dk, bf16* dw,
                               float* dbeta) {
#if PATHBENCH_SM90A_DEVICE
  using L = LocalBHopperLayout<D>;
  constexpr int NTD = D / 8, kCols = wgmma::kPanelCols;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = wgmma::align_to_swizzle(smem_raw);
  auto at = [smem](int offset) { return reinterpret_cast<bf16*>(smem + offset); };
  const LocalBHopperTiles t{at(L::w),  at(L::k),  at(L::dy), at(L::ainv), at(L::ainvlo),
                            at(L::dm), at(L::x),  at(L::xlo), at(L::sl),  at(L::dsl),
                            at(L::dx), at(L::dxlo), reinterpret_cast<float*>(smem + L::beta)};

  const int T = int(a.length), nch = int(ws.chunks), b = int(blockIdx.x), b0 = b * kChunk, valid = T - b0;
  const int r0 = 16 * warp_id();
  const int64_t bh = blockIdx.y, base = bh * T, prow = bh * ws.padded + b0;
  const int64_t cc = (bh * nch + b) * kChunk * kChunk;

  wgmma::load_tile_async<kChunk, D>(t.w, a.w + (base + b0) * D, D, valid);
  wgmma::load_tile_async<kChunk, D>(t.k, a.k + (base + b0) * D, D, valid);
  wgmma::load_tile_async<kChunk, D>(t.dy, ws.dy + prow * D, D, kChunk);
  wgmma::load_tile_async<kChunk, kChunk>(t.ainv, ws.ainv + cc, kChunk, kChunk);
  wgmma::load_tile_async<kChunk, kChunk>(t.ainvlo, ws.ainvlo + cc, kChunk, kChunk);
  wgmma::load_tile_async<kChunk, kChunk>(t.dm, ws.dm + cc, kChunk, kChunk);
  cp_async_commit();
  load_row_values(t.beta, a.beta + base + b0, kChunk, valid, 0.f);
  cp_async_wait<0>();
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();
  // dk and dw start from local a's partial sums.
  local_b_hopper_steps<D>(
      t, valid, dk + (base + b0) * D, dw + (base + b0) * D, dbeta + base + b0,
      [&](int h, float (&acc)[8][4]) { load_acc(acc, ws.dk_part + (prow + r0) * D + h * kCols, D); },
      [&](float (&acc)[NTD][4]) { load_acc(acc, ws.dw_part + (prow + r0) * D, D); });
#else
  __trap();  // launched only where hopper_kernels() holds
#endif
}

}  // namespace pathbench::cuda::local_b
