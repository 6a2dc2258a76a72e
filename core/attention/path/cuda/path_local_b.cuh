// PaTH's per-chunk backward, part b, CUDA (algorithm in path_kernels.h; launched by
// path_backward.cu): per chunk, the triangular solves' backward (dβ; A⁻ᵀ dX as a product with the
// A⁻¹ the prep kept) and the rest of dk, dw. Here: the steps both forms share (X formed again from
// A⁻¹, dβ), and the portable (mma.sync) kernel; path_local_b_hopper.cuh holds the Hopper form.
// Identities used (X = A⁻¹ diag β, A = I + diag(β) strict_lower(G), G = W Wᵀ):
//   dA = −A⁻ᵀ dX Xᵀ (strict lower part), dβ_i = (A⁻ᵀ dX)_ii + Σ_j dA_ij G_ij, dG = diag(β) dA.
#pragma once
#include "core/attention/path/cuda/path_workspace.cuh"

namespace pathbench::cuda::local_b {

using namespace tiles;

// X = A⁻¹ diag(β) formed again from the prep's A⁻¹ (bf16: A⁻¹_hi + A⁻¹_lo, about 16 significant bits)
// and stored as x (bf16: X_hi and X_lo, store_split_pair). from(r, c) and to(r, c) give the element
// offsets of entry (r, c) in the A⁻¹ and X tiles, c even (entries c and c + 1 lie side by side). The
// whole block; a barrier must follow.
template <typename S, class From, class To>
__device__ __forceinline__ void form_x(const S* ainv, const S* ainvlo, S* x, S* xlo, const float* beta, From from,
                                       To to) {
  for (int i = 2 * int(threadIdx.x); i < kChunk * kChunk; i += 2 * kThreads) {
    const int r = i / kChunk, c = i % kChunk;
    float2 inv = load_pair(ainv + from(r, c));
    if constexpr (!kInPlace<S>) {
      const float2 lo = load_pair(ainvlo + from(r, c));
      inv.x += lo.x, inv.y += lo.y;
    }
    store_split_pair(x + to(r, c), xlo + to(r, c), inv.x * beta[c], inv.y * beta[c + 1]);
  }
}

// For this warp's 16 rows (r0 …): stores dβ_i = Z_ii + Σ_j dA_ij G_ij for the rows below `valid`
// (dbeta from row r0), and turns dA into dG = diag(β) dA in place (beta: the chunk's [64] β).
__device__ __forceinline__ void store_beta_gradient(float* dbeta, float (&dga)[8][4], const float (&z)[8][4],
                                                    const float (&gram)[8][4], const float* beta, int r0, int valid) {
  float db[2] = {0.f, 0.f};
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = r0 + acc_row(e);
      db[e >> 1] += dga[n][e] * gram[n][e] + (acc_col(n, e) == i ? z[n][e] : 0.f);
      dga[n][e] *= beta[i];
    }
#pragma unroll
  for (int r = 0; r < 2; ++r) db[r] = quad_sum(db[r]);
  store_row_pair(dbeta, db, valid);
}

// ---- the portable kernel ------------------------------------------------------------------------

// bf16: dG takes dM's staged copy, which is dead once dSL is formed. Every product with X or A⁻¹
// takes its two bf16 parts (path_forward.cu's prep says why), and dX is split the same way, so that
// Z = A⁻ᵀ dX (three products) keeps about 16 significant bits. X and strict_lower(W Kᵀ) are formed
// here (form_x, one product), in shared memory for fp32 as well.
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
    xs = c.take<S>(tile_elems<S>(kChunk, kChunk));
    xlo = c.take<S>(staged_bytes<S>(kChunk, kChunk) / sizeof(S));
    ainv = c.take<S>(staged_bytes<S>(kChunk, kChunk) / sizeof(S));
    ainvlo = c.take<S>(staged_bytes<S>(kChunk, kChunk) / sizeof(S));
    sl = c.take<S>(tile_elems<S>(kChunk, kChunk));
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
  const TileRef<S> xs{sm.xs, lds}, xlo{sm.xlo, lds}, sl{sm.sl, lds};  // formed below (xlo: bf16 only)
  const TileRef<S> ainv = workspace_tile<S, kChunk, kChunk>(sm.ainv, ws.ainv + cc);
  TileRef<S> ainvlo{nullptr, 0};  // bf16 only
  if constexpr (!kInPlace<S>) ainvlo = workspace_tile<S, kChunk, kChunk>(sm.ainvlo, ws.ainvlo + cc);
  const TileRef<S> dm = workspace_tile<S, kChunk, kChunk>(sm.dm, ws.dm + cc);
  const TileRef<S> dy = workspace_tile<S, kChunk, D>(sm.dy, ws.dy + prow * D);
  cp_async_commit();
  load_row_values(sm.beta, a.beta + base + b0, kChunk, valid, 0.f);
  cp_async_wait<0>();
  __syncthreads();

  {  // strict_lower(W Kᵀ), this warp's rows
    float acc[8][4];
    zero(acc);
    mma_ss<BLayout::NK, false, 8, KTD>(acc, sm.w + r0 * ld, ld, sm.k, ld);
    mask_acc(acc, r0, [](int i, int j) { return j < i; });
    store_acc(acc, sm.sl + r0 * lds, lds);
  }
  form_x(ainv.p, ainvlo.p, sm.xs, sm.xlo, sm.beta, [&](int r, int c) { return r * ainv.ld + c; },
         [](int r, int c) { return r * lds + c; });
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
  store_beta_gradient(dbeta + base + b0 + r0, dga, z, gram, sm.beta, r0, valid - r0);
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

}  // namespace pathbench::cuda::local_b
