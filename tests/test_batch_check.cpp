// Token-batch validation (core/model/batch.h): a valid batch passes, and the first token or scored
// target outside the vocabulary is named with its position, wherever it lies (the checks ask whether
// there is any in one pass before looking for the first), while an unscored target is not checked; a
// vocabulary past int32's range admits every non-negative value.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstdint>

#include "core/error.h"
#include "core/model/batch.h"

namespace pathbench {
namespace {

// B = 3, T = 37 (111 positions: not a multiple of any vector width), tokens and targets in [0, 5).
TokenBatch valid_batch() {
  TokenBatch b;
  b.batch = 3;
  b.length = 37;
  for (int32_t i = 0; i < 111; ++i) {
    b.tokens.push_back(i % 5);
    b.targets.push_back((i + 1) % 5);
  }
  b.weights.assign(111, 1.0f);
  return b;
}

TEST_CASE("a batch check names the first token or scored target outside the vocabulary", "[model]") {
  constexpr int64_t vocab = 5;
  CHECK_NOTHROW(check_batch(valid_batch(), vocab));
  for (const size_t at : {size_t(0), size_t(63), size_t(110)}) {  // first, middle, last position
    INFO("position " << at);
    for (const int32_t bad : {-1, int32_t(vocab), 1 << 30, -(1 << 30)}) {
      INFO("value " << bad);
      TokenBatch tokens = valid_batch();
      tokens.tokens[at] = bad;
      if (at < 110) tokens.tokens[110] = -7;  // a later offender: the first one is named
      CHECK_THROWS_WITH(check_batch(tokens, vocab), Catch::Contains(fmt::format("token {} at position {}", bad, at)));
      TokenBatch targets = valid_batch();
      targets.targets[at] = bad;
      CHECK_THROWS_WITH(check_batch(targets, vocab), Catch::Contains(fmt::format("target {} at position {}", bad, at)));
      targets.weights[at] = 0.0f;  // unscored: its target is never read
      CHECK_NOTHROW(check_batch(targets, vocab));
    }
  }
  // A vocabulary past int32's range: every non-negative token is inside it, every negative one not.
  for (const int64_t huge : {int64_t(1) << 31, (int64_t(1) << 31) + 5, int64_t(1) << 40}) {
    INFO("vocabulary " << huge);
    TokenBatch largest = valid_batch();
    largest.tokens[63] = INT32_MAX;
    largest.targets[63] = INT32_MAX;
    CHECK_NOTHROW(check_batch(largest, huge));
    largest.targets[110] = -1;
    CHECK_THROWS_WITH(check_batch(largest, huge), Catch::Contains("target -1 at position 110"));
  }
  TokenBatch short_batch = valid_batch();
  short_batch.weights.pop_back();
  CHECK_THROWS_WITH(check_batch(short_batch, vocab), Catch::Contains("holds 111 tokens, 111 targets and 110 weights"));
}

}  // namespace
}  // namespace pathbench
