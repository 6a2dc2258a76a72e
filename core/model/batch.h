// A batch of token sequences, as the model consumes it: inputs, next-token targets and per-position
// loss weights (0 where the task does not score), all [B, T] row-major.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

namespace pathbench {

struct BatchPreparation;  // batch_preparation.h

struct TokenBatch {
  int64_t batch = 0;             // B
  int64_t length = 0;            // T
  std::vector<int32_t> tokens;   // [B, T]
  std::vector<int32_t> targets;  // [B, T]
  std::vector<float> weights;    // [B, T]
  // Work a GPU step would do on this batch, done ahead (batch_preparation.h), or null. It describes
  // the arrays above as they were when it was made: whoever changes them afterwards resets it.
  std::shared_ptr<const BatchPreparation> prepared;
};

// Throw pathbench::Error naming the position of the first token (or scored target) outside
// [0, vocab), or a batch whose arrays do not hold B·T entries.
void check_tokens(const int32_t* tokens, int64_t n, int64_t vocab);
void check_targets(const int32_t* targets, const float* weights, int64_t n, int64_t vocab);
void check_batch(const TokenBatch& batch, int64_t vocab);

}  // namespace pathbench
