// The rows of a batch grouped by token, built on the host and uploaded with the batch, so that the
// GPU's embedding backward (core/ops/cuda/embedding.cu) sums each token's rows in a fixed order
// without atomics. Plain host code: the CPU tests check it and every build compiles it.
#pragma once
#include <cstddef>
#include <cstdint>

namespace pathbench {

// Rows of one token a segment at most: the backward's first pass sums a segment in one block.
constexpr int64_t kEmbeddingSegmentRows = 64;

// An int32 array of `size` elements: [0] segment count, [1] run count, then at the offsets below:
// `order` (row indices stable-sorted by token), `segment_begin` (segments of at most 64 rows of one
// token, in order; one past the last = n), `run_token` and `run_segment` (run r = the segments of
// token run_token[r]: run_segment[r] … run_segment[r + 1]).
struct EmbeddingPlanLayout {
  int64_t rows = 0, max_segments = 0, max_runs = 0;
  size_t order = 0, segment_begin = 0, run_token = 0, run_segment = 0, size = 0;
};
EmbeddingPlanLayout embedding_plan_layout(int64_t n, int64_t vocab);

// Fills plan[layout.size] from tokens[n] (each in [0, vocab)).
void build_embedding_plan(const int32_t* tokens, int64_t n, int64_t vocab, int32_t* plan);

}  // namespace pathbench
