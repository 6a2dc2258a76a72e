// PaTH's forward over the pairs whose key lies in an earlier span, on Hopper (bf16, D = 64 and 128;
// path_forward.cu queues it where the workspace is kept for a backward): such a logit is the plain
// product Q⁽ʲ⁾ K̄ᵀ of the query and the key both moved to span j's end, so the softmax forward's
// warpgroup loop (softmax_kernels.cu) runs over them, spans right to left, and moves the query tile
// on at each span's first key chunk: Q⁽ʲ⁻¹⁾ = Q⁽ʲ⁾ F_j, a product it stores for the backward (the
// query movers' work where this pass runs). It leaves each query row's normalized output and
// log-sum-exp over those keys for the in-span scan to take up (OnlineSoftmax::resume).
#pragma once
#include "core/attention/cuda/online_softmax.cuh"
#include "core/attention/cuda/wgmma.cuh"
#include "core/attention/path/cuda/path_workspace.cuh"

namespace pathbench::cuda::cross_span {

using namespace tiles;

// Swizzled tiles from the aligned start of shared memory: two query tiles (Q⁽ʲ⁾ in one; the other
// takes the first 64 rows of the matrix it is multiplied by next, then the product), two stages of K̄
// and V (at D = 128 a K̄ tile no product needs takes that matrix's other 64 rows), then two stages
// of 64 key gates.
template <int D>
struct CrossSpanTiles {
  static constexpr int tile = wgmma::tile_bytes(kChunk, D);
  static constexpr size_t bytes = 6 * size_t(tile) + 2 * kChunk * sizeof(float) + wgmma::kSwizzleBytes;
  unsigned char* base;
  __device__ bf16* q(int i) const { return reinterpret_cast<bf16*>(base + i * tile); }
  __device__ bf16* k(int stage) const { return reinterpret_cast<bf16*>(base + (2 + stage) * tile); }
  __device__ bf16* v(int stage) const { return reinterpret_cast<bf16*>(base + (4 + stage) * tile); }
  __device__ float* gate(int stage) const { return reinterpret_cast<float*>(base + 6 * tile) + stage * kChunk; }
};

// Starts copying rows 64·piece … of a D × D workspace matrix into the swizzled [64, D] tile `into`.
template <int D>
__device__ __forceinline__ void load_rows_of_square(bf16* into, const bf16* m, int piece) {
  wgmma::load_tile_async<kChunk, D>(into, m + piece * kChunk * D, D, kChunk);
}

// The query tile q (Q⁽ʲ⁾, [64, D]) times a D × D matrix M whose rows 64·p … are on their way into
// the tiles m_rows[p] (p < D/64; m_rows[0] is the other query tile), stored into m_rows[0] (bf16)
// and at the global rows `out` (this warp's 16, row stride D). Its barriers order every warp's
// reads of q and of the row tiles before the tiles are written again.
template <int D>
__device__ __forceinline__ void move_query_tile(const bf16* q, bf16* const (&m_rows)[D / kChunk], bf16* out) {
  cp_async_wait<0>();
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();
  float u[D / 8][4];  // this warp's 16 rows of Q⁽ʲ⁾ m
  wgmma::arrive();
#pragma unroll
  for (int p = 0; p < D / kChunk; ++p)
    wgmma::issue_rows_by_tile<D>(u, q + p * kChunk * wgmma::kPanelCols, m_rows[p], p > 0);
  wgmma::commit();
  wgmma::wait<0>();
  wgmma::fence_operands(u);
  __syncthreads();
  const int r0 = 16 * warp_id();
#pragma unroll
  for (int h = 0; h < D / wgmma::kPanelCols; ++h)
    wgmma::store_acc<kChunk>(wgmma::panel(u, h), m_rows[0] + h * kChunk * wgmma::kPanelCols, r0);
  store_acc(u, out, D);
  wgmma::fence_shared_for_tensor_cores();
  __syncthreads();
}

// One block per query chunk after span 0 (the longest rows first): its key chunks from the last of
// the span before its own down to 0; all of them are whole chunks, and every one of its rows sees
// them. Its query tile starts as Q̂ R_x (Q̂ where the chunk starts its span).
template <int D>
__global__ void __launch_bounds__(kThreads, 2)
    path_cross_span_forward_hopper_kernel(PathAttentionCudaArgs<bf16> a, PathWorkspace<bf16> ws) {
#if PATHBENCH_SM90A_DEVICE
  constexpr int NTD = D / 8;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const CrossSpanTiles<D> tile{wgmma::align_to_swizzle(smem_raw)};
  const int T = int(a.length), s = int(ws.span_chunks), qb = int(ws.chunks) - 1 - int(blockIdx.x);
  const int q0 = qb * kChunk, own = qb / s, own_first = own * s, r0 = 16 * warp_id();
  const int64_t bh = blockIdx.y, base = bh * T, pbase = bh * ws.padded;
  const float* gate = a.cum_log_gate ? a.cum_log_gate + base : nullptr;
  auto qspan_rows = [&](int j) { return ws.qspan + ((bh * ws.spans + j) * ws.padded + q0 + r0) * D; };
  const bf16* fspan = ws.fspan + bh * ws.spans * D * D;  // [spans, D, D] F_j

  auto issue = [&](int kb) {  // key chunk kb
    const int st = kb & 1, k0 = kb * kChunk;
    wgmma::load_tile_async<kChunk, D>(tile.k(st), ws.kbar + (pbase + k0) * D, D, kChunk);
    wgmma::load_tile_async<kChunk, D>(tile.v(st), a.v + (base + k0) * D, D, kChunk);
    if (gate) load_row_values_async(tile.gate(st), gate + k0, kChunk, kChunk);
  };
  // A D × D matrix's rows 64·p … go to the other query tile (p = 0) and at D = 128 (p = 1) to the
  // K̄ tile of `stage`, which no product reads until that stage's next copies.
  auto row_tiles = [&](bf16* (&m_rows)[D / kChunk], int query_tile, int stage) {
    m_rows[0] = tile.q(query_tile);
    if constexpr (D > kChunk) m_rows[1] = tile.k(stage);
  };
  int cur = 0;  // the query tile holding Q⁽ʲ⁾
  bf16* rows_of_m[D / kChunk];
  wgmma::load_tile_async<kChunk, D>(tile.q(0), ws.qh + (pbase + q0) * D, D, kChunk);
  const bool prefix = qb > own_first;  // R_x is the identity where x starts its span
  if (prefix) {
    const bf16* rx = ws.prefix + (bh * ws.chunks + qb) * D * D;
    row_tiles(rows_of_m, 1, ((own_first - 1) & 1) ^ 1);  // the stage the first key chunk leaves free
    for (int p = 0; p < D / kChunk; ++p) load_rows_of_square<D>(rows_of_m[p], rx, p);
  }
  issue(own_first - 1);
  cp_async_commit();
  if (prefix) {
    move_query_tile<D>(tile.q(0), rows_of_m, qspan_rows(own - 1));
    cur = 1;
  } else {
    float u[NTD][4];
    load_acc(u, ws.qh + (pbase + q0 + r0) * D, D);
    store_acc(u, qspan_rows(own - 1), D);
  }

  SoftmaxRows<NTD> rows(a.scale, a.gate_scale, gate, q0, T);
  for (int kb = own_first - 1; kb >= 0; --kb) {
    const int j = kb / s, st = kb & 1;
    const bool moves_next = j > 0 && kb == j * s;               // the span's last chunk here: Q⁽ʲ⁻¹⁾ follows
    const bool starts_span = j > 0 && kb == (j + 1) * s - 1;    // F_j's first rows start loading
    const bf16* fj = fspan + j * D * D;
    wgmma::next_stage(kb > 0 || starts_span, [&] {
      if (kb > 0) issue(kb - 1);
      if (starts_span) load_rows_of_square<D>(tile.q(cur ^ 1), fj, 0);
    });
    float x[8][4];
    wgmma::rows_by_rows<D>(x, tile.q(cur), tile.k(st));
    if (moves_next) {
      row_tiles(rows_of_m, cur ^ 1, st);
      if constexpr (D > kChunk) {  // F_j's second 64 rows into this K̄ tile, read by every warp now
        __syncthreads();
        load_rows_of_square<D>(rows_of_m[1], fj, 1);
        cp_async_commit();
      }
    }
    rows.weigh(x, false, gate ? tile.gate(st) : nullptr);
    wgmma::add_regs_by_tile<D>(rows.o, x, tile.v(st));
    if (moves_next) {
      move_query_tile<D>(tile.q(cur), rows_of_m, qspan_rows(j - 1));
      cur ^= 1;
    }
  }
  const int64_t row0 = pbase + q0 + r0;
  rows.store(ws.ocross + row0 * D, ws.lsecross + row0, D, 16);
#else
  __trap();  // launched only where hopper_kernels() holds
#endif
}

}  // namespace pathbench::cuda::cross_span
