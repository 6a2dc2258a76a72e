// Which 64-row blocks a block of two warpgroups takes when each warpgroup works on one of them:
// causal, blocks 2p and 2p + 1; across PaTH's spans of span_blocks blocks, pairs that stay inside one
// span (both warpgroups meet the same span's transforms and moved queries), ⌈span_blocks / 2⌉ a span,
// the last one's second block absent when span_blocks is odd. The key-major backward at D = 128
// (key_major_backward_hopper.cuh) pairs key blocks this way, PaTH's query chain (path_span.cu) query
// chunks. Plain arithmetic, callable from host code (the launches, tests) and device code; the
// kernels pass `causal` as a constant, so the other form's arithmetic folds away.
#pragma once

#ifdef __CUDACC__
#define PATHBENCH_HOST_DEVICE __host__ __device__
#else
#define PATHBENCH_HOST_DEVICE
#endif

namespace pathbench::cuda {

// Pairs (blocks of the grid) for `blocks` blocks.
PATHBENCH_HOST_DEVICE constexpr int block_pairs(bool causal, int blocks, int span_blocks) {
  return causal ? (blocks + 1) / 2 : (blocks + span_blocks - 1) / span_blocks * ((span_blocks + 1) / 2);
}

// The first block of pair `pair`: causal, 2·pair; across spans, pair j of span s starts at
// s·span_blocks + 2j.
PATHBENCH_HOST_DEVICE constexpr int pair_first_block(bool causal, int pair, int span_blocks) {
  if (causal) return 2 * pair;
  const int per_span = (span_blocks + 1) / 2;
  return pair / per_span * span_blocks + 2 * (pair % per_span);
}

// Whether warpgroup g (0 or 1) of the pair starting at block `first` has a block of its own: inside
// the blocks and, across spans, in the pair's span (else the next span's pair has it).
PATHBENCH_HOST_DEVICE constexpr bool pair_owns_block(bool causal, int first, int g, int blocks, int span_blocks) {
  const int b = first + g;
  return b < blocks && (causal || b / span_blocks == first / span_blocks);
}

}  // namespace pathbench::cuda

#undef PATHBENCH_HOST_DEVICE
