// The embedding backward's plan (embedding_plan.h): a stable counting sort of the rows by token, in
// parts walked side by side so that its counter updates do not wait on one another.
#include "core/ops/embedding_plan.h"

#include <algorithm>
#include <vector>

namespace pathbench {

namespace {

// Parts of the rows sorted side by side: with one counter array, every row's read-increment-write of
// its token's counter waits for the previous row's when the tokens repeat, as they do in a small
// vocabulary (the sort alone about 40 µs for 64 × 512 rows of 8 tokens in one part, 24 in eight).
constexpr int kParts = 8;

// order[0 … n) = the row indices stable-sorted by token, and start[v] = the first slot of token v
// (start[vocab] = n). The rows split into Parts contiguous blocks, each counting and placing its own
// rows; token v's slots hold part 0's rows of v, then part 1's, …: the order of one pass in row order.
template <int Parts>
void counting_sort(const int32_t* tokens, int64_t n, int64_t vocab, int32_t* order, std::vector<int32_t>& start) {
  const int64_t part_rows = (n + Parts - 1) / Parts;
  std::vector<int32_t> cursor(size_t(Parts * vocab), 0);  // [part, token]: counts, then next slots
  for (int64_t i = 0; i < part_rows; ++i)
    for (int p = 0; p < Parts; ++p) {
      const int64_t row = p * part_rows + i;
      if (row < n) ++cursor[p * vocab + tokens[row]];
    }
  start.assign(size_t(vocab + 1), 0);
  int32_t slot = 0;
  for (int64_t v = 0; v < vocab; ++v) {
    start[v] = slot;
    for (int p = 0; p < Parts; ++p) {
      const int32_t count = cursor[p * vocab + v];
      cursor[p * vocab + v] = slot;
      slot += count;
    }
  }
  start[vocab] = slot;
  for (int64_t i = 0; i < part_rows; ++i)
    for (int p = 0; p < Parts; ++p) {
      const int64_t row = p * part_rows + i;
      if (row < n) order[cursor[p * vocab + tokens[row]]++] = int32_t(row);
    }
}

}  // namespace

EmbeddingPlanLayout embedding_plan_layout(int64_t n, int64_t vocab) {
  EmbeddingPlanLayout l;
  l.rows = n;
  l.max_runs = std::min(n, vocab);
  l.max_segments = (n + kEmbeddingSegmentRows - 1) / kEmbeddingSegmentRows + l.max_runs;
  l.order = 2;
  l.segment_begin = l.order + size_t(n);
  l.run_token = l.segment_begin + size_t(l.max_segments) + 1;
  l.run_segment = l.run_token + size_t(l.max_runs);
  l.size = l.run_segment + size_t(l.max_runs) + 1;
  return l;
}

void build_embedding_plan(const int32_t* tokens, int64_t n, int64_t vocab, int32_t* plan) {
  const EmbeddingPlanLayout l = embedding_plan_layout(n, vocab);
  std::vector<int32_t> start;  // start[v] = first slot of token v
  // Parts where their counters are few beside the rows (a large vocabulary would spend more on them).
  if (kParts * vocab <= n)
    counting_sort<kParts>(tokens, n, vocab, plan + l.order, start);
  else
    counting_sort<1>(tokens, n, vocab, plan + l.order, start);
  int32_t segments = 0, runs = 0;
  for (int64_t v = 0; v < vocab; ++v) {
    if (start[v] == start[v + 1]) continue;
    plan[l.run_token + runs] = int32_t(v);
    plan[l.run_segment + runs] = segments;
    ++runs;
    for (int32_t b = start[v]; b < start[v + 1]; b += int32_t(kEmbeddingSegmentRows))
      plan[l.segment_begin + segments++] = b;
  }
  plan[l.segment_begin + segments] = int32_t(n);
  plan[l.run_segment + runs] = segments;
  plan[0] = segments;
  plan[1] = runs;
}

}  // namespace pathbench
