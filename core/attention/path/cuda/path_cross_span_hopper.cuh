// PaTH's forward over the pairs whose key lies in an earlier span, on Hopper (bf16, D = 64 and 128;
// path_forward.cu queues it where the workspace is kept for a backward): such a logit is the plain
// product Q⁽ʲ⁾ K̄ᵀ of the query and the key both moved to span j's end, so the softmax forward's
// warpgroup loop (softmax_kernels.cu) runs over them with the query tile switched at each span's
// first key chunk, and leaves each query row's normalized output and log-sum-exp over those keys
// for the in-span scan to take up (OnlineSoftmax::resume).
#pragma once
#include "core/attention/cuda/online_softmax.cuh"
#include "core/attention/cuda/wgmma.cuh"
#include "core/attention/path/cuda/path_workspace.cuh"

namespace pathbench::cuda::cross_span {

using namespace tiles;

// Swizzled tiles from the aligned start of shared memory: two query tiles Q⁽ʲ⁾ (by the parity of
// span j, so that the next span's loads while this one's are read), two stages of K̄ and V, then
// two stages of 64 key gates.
template <int D>
struct CrossSpanTiles {
  static constexpr int tile = wgmma::tile_bytes(kChunk, D);
  static constexpr size_t bytes = 6 * size_t(tile) + 2 * kChunk * sizeof(float) + wgmma::kSwizzleBytes;
  unsigned char* base;
  __device__ bf16* q(int span) const { return reinterpret_cast<bf16*>(base + (span & 1) * tile); }
  __device__ bf16* k(int stage) const { return reinterpret_cast<bf16*>(base + (2 + stage) * tile); }
  __device__ bf16* v(int stage) const { return reinterpret_cast<bf16*>(base + (4 + stage) * tile); }
  __device__ float* gate(int stage) const { return reinterpret_cast<float*>(base + 6 * tile) + stage * kChunk; }
};

// One block per query chunk after span 0 (the longest rows first), its key chunks 0 … first of its
// own span − 1 left to right; all of them are whole chunks, and every one of its rows sees them.
template <int D>
__global__ void __launch_bounds__(kThreads, 2)
    path_cross_span_forward_hopper_kernel(PathAttentionCudaArgs<bf16> a, PathWorkspace<bf16> ws) {
#if PATHBENCH_SM90A_DEVICE
  constexpr int NTD = D / 8;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const CrossSpanTiles<D> tile{wgmma::align_to_swizzle(smem_raw)};
  const int T = int(a.length), s = int(ws.span_chunks), qb = int(ws.chunks) - 1 - int(blockIdx.x);
  const int q0 = qb * kChunk, own_first = qb / s * s;
  const int64_t bh = blockIdx.y, base = bh * T, pbase = bh * ws.padded;
  const float* gate = a.cum_log_gate ? a.cum_log_gate + base : nullptr;

  auto issue = [&](int kb) {  // key chunk kb, and Q⁽ʲ⁾ where it starts span j
    const int st = kb & 1, k0 = kb * kChunk;
    if (kb % s == 0) {
      const int j = kb / s;
      wgmma::load_tile_async<kChunk, D>(tile.q(j), ws.qspan + ((bh * ws.spans + j) * ws.padded + q0) * D, D, kChunk);
    }
    wgmma::load_tile_async<kChunk, D>(tile.k(st), ws.kbar + (pbase + k0) * D, D, kChunk);
    wgmma::load_tile_async<kChunk, D>(tile.v(st), a.v + (base + k0) * D, D, kChunk);
    if (gate) load_row_values_async(tile.gate(st), gate + k0, kChunk, kChunk);
  };
  issue(0);
  cp_async_commit();

  SoftmaxRows<NTD> rows(a.scale, a.gate_scale, gate, q0, T);
  for (int kb = 0; kb < own_first; ++kb) {
    wgmma::next_stage(kb + 1 < own_first, [&] { issue(kb + 1); });
    const int st = kb & 1;
    float x[8][4];
    wgmma::rows_by_rows<D>(x, tile.q(kb / s), tile.k(st));
    rows.weigh(x, false, gate ? tile.gate(st) : nullptr);
    wgmma::add_regs_by_tile<D>(rows.o, x, tile.v(st));
  }
  const int64_t row0 = pbase + q0 + 16 * warp_id();
  rows.store(ws.ocross + row0 * D, ws.lsecross + row0, D, 16);
#else
  __trap();  // launched only where hopper_kernels() holds
#endif
}

}  // namespace pathbench::cuda::cross_span
