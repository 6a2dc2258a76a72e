// PaTH's forward scan on Hopper (sm_90a, bf16, D = 64 or 128): path_forward.cu's scan (one block per
// query chunk, key chunks leftwards under an online softmax) with every product a warpgroup product
// over swizzled tiles (wgmma.cuh), the moved queries U from registers: logits U K̂ᵀ or U K̄ᵀ and U Wᵀ
// (K-major K̂, K̄, W), the chunk crossing U ← U − (U Wᵀ) Y and the span crossing U ← U F_j (Y, F_j
// read MN-major), and O += P V. A stage holds K̂ or K̄, Y, W and V of one key chunk; F_j takes Y's
// tile (and W's at D = 128, where it is [128, 128]). Two stages at D = 64, one at 128.
#pragma once
#include "core/attention/cuda/online_softmax.cuh"
#include "core/attention/cuda/wgmma.cuh"
#include "core/attention/path/cuda/path_workspace.cuh"

namespace pathbench::cuda::path_forward {

using namespace tiles;

template <int D>
struct PathForwardHopperLayout {
  static constexpr int tile = wgmma::tile_bytes(kChunk, D);  // a swizzled [64, D] tile
  static constexpr int stage_bytes = 4 * tile;               // K̂ or K̄, Y (or F_j), W, V
  static constexpr int stages = 2 * stage_bytes <= 113 * 1024 ? 2 : 1;
  static_assert(wgmma::tile_bytes(D, D) <= 2 * tile, "F_j fits the Y and W tiles");
  static constexpr size_t bytes = size_t(stages) * (stage_bytes + kChunk * sizeof(float)) + wgmma::kSwizzleBytes;
};

template <int D>
__global__ void __launch_bounds__(kThreads)
    path_forward_hopper_kernel(PathAttentionCudaArgs<bf16> a, PathWorkspace<bf16> ws, bf16* o, float* lse) {
#if PATHBENCH_SM90A_DEVICE
  using L = PathForwardHopperLayout<D>;
  constexpr int NTD = D / 8, kStages = L::stages;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* smem = wgmma::align_to_swizzle(smem_raw);
  // tile i of stage st: 0 K̂ or K̄, 1 Y (or F_j), 2 W, 3 V, each [64, D]
  auto stage_tile = [smem](int st, int i) { return reinterpret_cast<bf16*>(smem + st * L::stage_bytes + i * L::tile); };
  float* sgate = reinterpret_cast<float*>(smem + kStages * L::stage_bytes);  // [stages][64] the key chunk's gates

  const int T = int(a.length), nch = int(ws.chunks), qb = nch - 1 - int(blockIdx.x), s = int(ws.span_chunks);
  const int q0 = qb * kChunk, r0 = 16 * warp_id(), own_first = qb / s * s;
  const int64_t bh = blockIdx.y, base = bh * T, pbase = bh * ws.padded;
  const float* gate = a.cum_log_gate ? a.cum_log_gate + base : nullptr;
  auto crosses_span = [&](int kb) { return kb > 0 && kb % s == 0; };  // U ← U F_{kb/s} after chunk kb

  // Iteration `it` handles key chunk qb − it: first the diagonal chunk, then leftwards.
  auto issue = [&](int it) {
    const int st = it % kStages, kb = qb - it, k0 = kb * kChunk;
    wgmma::load_tile_async<kChunk, D>(stage_tile(st, 3), a.v + (base + k0) * D, D, T - k0);
    if (it > 0 && kb >= own_first) {
      wgmma::load_tile_async<kChunk, D>(stage_tile(st, 0), ws.kh + (pbase + k0) * D, D, kChunk);
      wgmma::load_tile_async<kChunk, D>(stage_tile(st, 1), ws.y + (pbase + k0) * D, D, kChunk);
      wgmma::load_tile_async<kChunk, D>(stage_tile(st, 2), a.w + (base + k0) * D, D, T - k0);
    } else if (it > 0) {
      wgmma::load_tile_async<kChunk, D>(stage_tile(st, 0), ws.kbar + (pbase + k0) * D, D, kChunk);
      if (crosses_span(kb))
        wgmma::load_tile_async<D, D>(stage_tile(st, 1), ws.fspan + (bh * ws.spans + kb / s) * D * D, D, D);
    }
    if (gate) load_row_values(sgate + st * kChunk, gate + k0, kChunk, T - k0, 0.f);
  };
  issue(0);
  cp_async_commit();

  const float scale2 = a.scale * kLog2e, ratio = a.gate_scale / a.scale;
  float row_gate[2];
  row_gates(row_gate, gate, q0, T);
  float u[NTD][4];  // the warp's queries, moved to the start of the key chunk being visited
  load_acc(u, ws.qh + (pbase + q0 + r0) * D, D);
  OnlineSoftmax sm_state;
  float acc_o[NTD][4];
  zero(acc_o);
  for (int it = 0; it <= qb; ++it) {
    wgmma::next_stage(kStages == 2 && it < qb, [&] { issue(it + 1); });
    const int st = it % kStages, kb = qb - it;
    float x[8][4];
    if (it == 0) {
      load_own_logits(x, ws.sd + (bh * nch + qb) * kChunk * kChunk);
    } else {
      const bool in_span = kb >= own_first;
      Frag16<bf16> fu[D / 16];
      wgmma::to_fragments(fu, u);
      float t[8][4];  // U Wᵀ inside the query chunk's span
      wgmma::fence_operands(u);
      wgmma::arrive();
      wgmma::issue_regs_by_rows<D>(x, fu, stage_tile(st, 0));  // U K̂ᵀ, or U K̄ᵀ for an earlier span
      if (in_span)
        wgmma::issue_regs_by_rows<D>(t, fu, stage_tile(st, 2));
      else if (crosses_span(kb))
        wgmma::issue_regs_by_square<D>(u, fu, stage_tile(st, 1), false);  // U ← U F_j past the span's first chunk
      wgmma::commit();
      wgmma::wait<0>();
      wgmma::fence_operands(x);
      wgmma::fence_operands(u);
      wgmma::fence_operands(fu);
      if (in_span) {
        wgmma::fence_operands(t);
        if (kb > 0) {  // U ← U (I − Wᵀ X W)
          negate(t);
          wgmma::add_regs_by_tile<D>(u, t, stage_tile(st, 1));
        }
      }
    }
    causal_logits(x, it == 0, row_gate, gate ? sgate + st * kChunk : nullptr, ratio);
    sm_state.update(x, acc_o, scale2);
    wgmma::add_regs_by_tile<D>(acc_o, x, stage_tile(st, 3));
    if constexpr (kStages == 1) {
      __syncthreads();
      if (it < qb) issue(it + 1);
      cp_async_commit();
    }
  }
  const int row0 = q0 + r0;
  sm_state.store(acc_o, o + (base + row0) * D, lse + base + row0, D, T - row0);
#else
  __trap();  // launched only where hopper_kernels() holds
#endif
}

}  // namespace pathbench::cuda::path_forward
