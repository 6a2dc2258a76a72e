// Validation of token batches against a model's vocabulary.
#include "core/model/batch.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace pathbench {

namespace {

// The values v with unsigned(v) ≥ bound are those outside [0, vocab): negative ones wrap past 2³¹.
// One 32-bit unsigned comparison, so that the loops below vectorize with plain SSE2 (64-bit
// comparisons do not, and left the two passes over a 64 × 512 batch at about 50 µs).
uint32_t outside_bound(int64_t vocab) { return uint32_t(std::min<int64_t>(vocab, int64_t(1) << 31)); }

}  // namespace

// Each check asks whether any value is an offender first (a loop without branches) and looks for the
// first one only when there is one: a valid batch, the common case, costs one vectorized pass.
void check_tokens(const int32_t* tokens, int64_t n, int64_t vocab) {
  const uint32_t bound = outside_bound(vocab);
  uint32_t any = 0;
  for (int64_t i = 0; i < n; ++i) any |= uint32_t(uint32_t(tokens[i]) >= bound);
  if (any == 0) return;
  for (int64_t i = 0; i < n; ++i)
    if (uint32_t(tokens[i]) >= bound)
      throw Error(fmt::format("token {} at position {} is outside the vocabulary of size {}", tokens[i], i, vocab));
}

void check_targets(const int32_t* targets, const float* weights, int64_t n, int64_t vocab) {
  const uint32_t bound = outside_bound(vocab);
  uint32_t any = 0;
  for (int64_t i = 0; i < n; ++i) any |= uint32_t(weights[i] != 0.0f) & uint32_t(uint32_t(targets[i]) >= bound);
  if (any == 0) return;
  for (int64_t i = 0; i < n; ++i)
    if (weights[i] != 0.0f && uint32_t(targets[i]) >= bound)
      throw Error(fmt::format("target {} at position {} is outside the vocabulary of size {}", targets[i], i, vocab));
}

void check_batch(const TokenBatch& batch, int64_t vocab) {
  const size_t n = size_t(batch.batch * batch.length);
  if (batch.batch <= 0 || batch.length <= 0 || batch.tokens.size() != n || batch.targets.size() != n ||
      batch.weights.size() != n)
    throw Error(fmt::format("token batch of shape {}×{} holds {} tokens, {} targets and {} weights", batch.batch,
                            batch.length, batch.tokens.size(), batch.targets.size(), batch.weights.size()));
  check_tokens(batch.tokens.data(), int64_t(n), vocab);
  check_targets(batch.targets.data(), batch.weights.data(), int64_t(n), vocab);
}

}  // namespace pathbench
