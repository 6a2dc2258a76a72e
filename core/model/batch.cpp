// Validation of token batches against a model's vocabulary.
#include "core/model/batch.h"

#include <fmt/format.h>

#include "core/error.h"

namespace pathbench {

namespace {

// Whether x lies outside [0, vocab), without branches (bitwise | of the two comparisons), so that
// the counting loops below vectorize.
inline bool outside(int32_t x, int64_t vocab) { return (x < 0) | (int64_t(x) >= vocab); }

}  // namespace

// Each check counts the offenders first (a loop without branches) and looks for the first one only
// when there is one: a valid batch, the common case, costs one vectorized pass.
void check_tokens(const int32_t* tokens, int64_t n, int64_t vocab) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += outside(tokens[i], vocab);
  if (bad == 0) return;
  for (int64_t i = 0; i < n; ++i)
    if (outside(tokens[i], vocab))
      throw Error(fmt::format("token {} at position {} is outside the vocabulary of size {}", tokens[i], i, vocab));
}

void check_targets(const int32_t* targets, const float* weights, int64_t n, int64_t vocab) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += (weights[i] != 0.0f) & outside(targets[i], vocab);
  if (bad == 0) return;
  for (int64_t i = 0; i < n; ++i)
    if (weights[i] != 0.0f && outside(targets[i], vocab))
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
