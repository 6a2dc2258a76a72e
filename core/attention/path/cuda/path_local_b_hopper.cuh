// PaTH's per-chunk backward, part b, on Hopper (sm_90a, bf16, D = 64 or 128): path_local_b.cuh's
// kernel with every product a warpgroup product over swizzled tiles (wgmma.cuh). Z and dSL, dG enter
// the products that follow them from registers; every other operand is read from shared memory,
// K-major or MN-major as it lies. Products with X and A⁻¹ take both bf16 parts, and dX is split the
// same way (path_local_b.cuh says why). X and strict_lower(W Kᵀ) are formed here from A⁻¹ and from
// W, K (form_x, one product). dG takes dM's tile once dM's last product is done.
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

template <int D>
__global__ void __launch_bounds__(kThreads)
    path_local_b_hopper_kernel(PathAttentionCudaArgs<bf16> a, PathWorkspace<bf16> ws, bf16* dk, bf16* dw,
                               float* dbeta) {
#if PATHBENCH_SM90A_DEVICE
  using L = LocalBHopperLayout<D>;
  constexpr int NTD = D / 8, kPanels = D / wgmma::kPanelCols, kCols = wgmma::kPanelCols;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = wgmma::align_to_swizzle(smem_raw);
  auto at = [smem](int offset) { return reinterpret_cast<bf16*>(smem + offset); };
  bf16 *sw = at(L::w), *sk = at(L::k), *sdy = at(L::dy);                                   // [64, D]
  bf16 *sx = at(L::x), *sxlo = at(L::xlo), *sainv = at(L::ainv), *sainvlo = at(L::ainvlo);  // [64, 64]
  bf16 *ssl = at(L::sl), *sdm = at(L::dm), *sdsl = at(L::dsl), *sdx = at(L::dx), *sdxlo = at(L::dxlo);
  bf16* sdg = sdm;  // dG, once dM's last product is done
  float* beta = reinterpret_cast<float*>(smem + L::beta);

  const int T = int(a.length), nch = int(ws.chunks), b = int(blockIdx.x), b0 = b * kChunk, valid = T - b0;
  const int r0 = 16 * warp_id();
  const int64_t bh = blockIdx.y, base = bh * T, prow = bh * ws.padded + b0;
  const int64_t cc = (bh * nch + b) * kChunk * kChunk;

  wgmma::load_tile_async<kChunk, D>(sw, a.w + (base + b0) * D, D, valid);
  wgmma::load_tile_async<kChunk, D>(sk, a.k + (base + b0) * D, D, valid);
  wgmma::load_tile_async<kChunk, D>(sdy, ws.dy + prow * D, D, kChunk);
  wgmma::load_tile_async<kChunk, kChunk>(sainv, ws.ainv + cc, kChunk, kChunk);
  wgmma::load_tile_async<kChunk, kChunk>(sainvlo, ws.ainvlo + cc, kChunk, kChunk);
  wgmma::load_tile_async<kChunk, kChunk>(sdm, ws.dm + cc, kChunk, kChunk);
  cp_async_commit();
  load_row_values(beta, a.beta + base + b0, kChunk, valid, 0.f);
  cp_async_wait<0>();
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();

  {  // strict_lower(W Kᵀ), this warp's rows, while X is formed
    float sl[8][4];
    wgmma::arrive();
    wgmma::issue_rows_by_rows<D>(sl, sw, sk);
    wgmma::commit();
    auto swizzled = [](int r, int c) { return wgmma::swizzled_offset(kChunk, r, c) / int(sizeof(bf16)); };
    form_x(sainv, sainvlo, sx, sxlo, beta, swizzled, swizzled);
    wgmma::wait<0>();
    wgmma::fence_operands(sl);
    mask_acc(sl, r0, [](int i, int j) { return j < i; });
    wgmma::store_acc<kChunk>(sl, ssl, r0);
  }
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();

  // dX = tril(dM SLᵀ + dY Wᵀ) and dSL = strict_lower(Xᵀ dM), rows r0 …
  float dx[8][4], dsl[8][4];
  wgmma::arrive();
  wgmma::issue_rows_by_rows<kChunk>(dx, sdm, ssl);
  wgmma::issue_rows_by_rows<D>(dx, sdy, sw, true);
  wgmma::issue_tile_by_tile(dsl, sx, sdm, 0);
  wgmma::issue_tile_by_tile(dsl, sxlo, sdm, 0, 0, true);
  wgmma::commit();
  wgmma::wait<0>();
  wgmma::fence_operands(dx);
  wgmma::fence_operands(dsl);
  mask_acc(dx, r0, [](int i, int j) { return j <= i; });
  store_acc_split_swizzled(dx, sdx, sdxlo, r0);
  mask_acc(dsl, r0, [](int i, int j) { return j < i; });
  wgmma::store_acc<kChunk>(dsl, sdsl, r0);
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();
  // Z = A⁻ᵀ dX, this warp's rows (rows past the sequence's end have β = 0, so A⁻¹'s rows and
  // columns there are those of I: they keep Z = dX and change no other row), and this warp's rows
  // of G = W Wᵀ (the prep's product, recomputed).
  float z[8][4], gram[8][4];
  wgmma::arrive();
  wgmma::issue_tile_by_tile(z, sainv, sdx, 0);
  wgmma::issue_tile_by_tile(z, sainv, sdxlo, 0, 0, true);
  wgmma::issue_tile_by_tile(z, sainvlo, sdx, 0, 0, true);
  wgmma::issue_rows_by_rows<D>(gram, sw, sw);
  wgmma::commit();
  wgmma::wait<0>();
  wgmma::fence_operands(z);
  wgmma::fence_operands(gram);
  float dga[8][4];  // dA = strict_lower(−Z Xᵀ), then dG = diag(β) dA
  {
    Frag16<bf16> fz[4];
    wgmma::to_fragments(fz, z);
    wgmma::arrive();
    wgmma::issue_regs_by_rows<kChunk>(dga, fz, sx);
    wgmma::issue_regs_by_rows<kChunk>(dga, fz, sxlo, true);
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(dga);
    wgmma::fence_operands(fz);
  }
  mask_acc(dga, r0, [](int i, int j) { return j < i; });
  negate(dga);
  store_beta_gradient(dbeta + base + b0 + r0, dga, z, gram, beta, r0, valid - r0);
  wgmma::store_acc<kChunk>(dga, sdg, r0);  // over dM, whose last products came before the barrier
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();
#pragma unroll 1
  for (int h = 0; h < kPanels; ++h) {  // dk = dk(part) + dSLᵀ W, rows r0 …, columns 64h …
    float acc[8][4];
    load_acc(acc, ws.dk_part + (prow + r0) * D + h * kCols, D);
    wgmma::tile_by_tile(acc, sdsl, sw, h, 0, true);
    store_acc(acc, dk + (base + b0 + r0) * D + h * kCols, D, valid - r0);
  }
  {  // dw = dw(part) + dSL K + Xᵀ dY + dG W + dGᵀ W
    float acc[NTD][4];
    load_acc(acc, ws.dw_part + (prow + r0) * D, D);
    Frag16<bf16> fdsl[4], fdg[4];
    wgmma::to_fragments(fdsl, dsl);
    wgmma::to_fragments(fdg, dga);
    wgmma::fence_operands(acc);
    wgmma::arrive();
    wgmma::issue_regs_by_tile<D>(acc, fdsl, sk);
    wgmma::issue_regs_by_tile<D>(acc, fdg, sw);
#pragma unroll
    for (int h = 0; h < kPanels; ++h) {
      wgmma::issue_tile_by_tile(wgmma::panel(acc, h), sx, sdy, h, 0, true);
      wgmma::issue_tile_by_tile(wgmma::panel(acc, h), sxlo, sdy, h, 0, true);
      wgmma::issue_tile_by_tile(wgmma::panel(acc, h), sdg, sw, h, 0, true);
    }
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(acc);
    wgmma::fence_operands(fdsl);
    wgmma::fence_operands(fdg);
    store_acc(acc, dw + (base + b0 + r0) * D, D, valid - r0);
  }
#else
  __trap();  // launched only where hopper_kernels() holds
#endif
}

}  // namespace pathbench::cuda::local_b
