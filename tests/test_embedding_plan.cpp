// The GPU embedding backward's host-built plan (core/ops/embedding_plan.h) against one made the
// plain way: rows stable-sorted by token with std::stable_sort, cut into segments of at most 64 rows
// per token, one run per token present. Row counts that do and do not split into the sort's eight
// parts, vocabularies small enough for the parts and too large for them, repeated and single tokens.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "core/ops/embedding_plan.h"

namespace pathbench {
namespace {

// The plan built from its definition.
std::vector<int32_t> reference_plan(const std::vector<int32_t>& tokens, int64_t vocab) {
  const int64_t n = int64_t(tokens.size());
  const EmbeddingPlanLayout l = embedding_plan_layout(n, vocab);
  std::vector<int32_t> plan(l.size, -1), order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return tokens[a] < tokens[b]; });
  std::copy(order.begin(), order.end(), plan.begin() + l.order);
  int32_t segments = 0, runs = 0;
  for (int64_t i = 0; i < n;) {
    const int32_t token = tokens[order[i]];
    plan[l.run_token + runs] = token;
    plan[l.run_segment + runs++] = segments;
    int64_t end = i;
    while (end < n && tokens[order[end]] == token) ++end;
    for (int64_t b = i; b < end; b += kEmbeddingSegmentRows) plan[l.segment_begin + segments++] = int32_t(b);
    i = end;
  }
  plan[l.segment_begin + segments] = int32_t(n);
  plan[l.run_segment + runs] = segments;
  plan[0] = segments;
  plan[1] = runs;
  return plan;
}

TEST_CASE("the embedding plan sorts rows by token stably and cuts them into segments and runs", "[ops]") {
  std::mt19937 rng(3);
  const int64_t sizes[][2] = {{1, 1},    {7, 3},      {100, 8},   {109, 8},  {4096, 5},
                              {32768, 8}, {1000, 300}, {64, 1000}, {130, 1},  {513, 64}};  // rows, vocabulary
  for (const auto& [n, vocab] : sizes)
    for (const int pattern : {0, 1, 2}) {  // random tokens, runs of one token, every row one token
      INFO("rows " << n << ", vocabulary " << vocab << ", pattern " << pattern);
      std::vector<int32_t> tokens(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i)
        tokens[i] = pattern == 0   ? int32_t(rng() % uint32_t(vocab))
                    : pattern == 1 ? int32_t(i / 70 % vocab)
                                   : int32_t(vocab - 1);
      const std::vector<int32_t> expected = reference_plan(tokens, vocab);
      std::vector<int32_t> plan(expected.size(), -1);
      build_embedding_plan(tokens.data(), n, vocab, plan.data());
      // Slots past the counts are scratch the backward never reads: compare what the counts cover.
      const EmbeddingPlanLayout l = embedding_plan_layout(n, vocab);
      const int32_t segments = expected[0], runs = expected[1];
      REQUIRE(plan[0] == segments);
      REQUIRE(plan[1] == runs);
      auto same = [&](size_t at, int64_t count) {
        return std::equal(plan.begin() + at, plan.begin() + at + count, expected.begin() + at);
      };
      CHECK(same(l.order, n));
      CHECK(same(l.segment_begin, segments + 1));
      CHECK(same(l.run_token, runs));
      CHECK(same(l.run_segment, runs + 1));
    }
}

}  // namespace
}  // namespace pathbench
