// Timing of CPU training steps of the standard model (shared by `bench` and `bench-tasks`).
#pragma once
#include <cstdint>
#include <string>

#include "core/model/batch.h"

namespace pathbench {

// The standard benchmark: model shape and batch.
struct StepBenchShape {
  int64_t layers = 2, width = 128, heads = 4, length = 256, batch = 16, vocab = 8;
};

struct StepTiming {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int64_t parameters = 0;
};

// Random tokens; the target of each position is the next token (timing does not depend on data).
TokenBatch random_batch(int64_t batch, int64_t length, int64_t vocab, uint64_t seed);

// Times `steps` Trainer<float> steps, after `warmup` untimed ones, of the model of `shape` with
// position encoding `encoding` on a random batch of `shape`.
StepTiming time_training_steps(const StepBenchShape& shape, const std::string& encoding, int warmup, int steps);

}  // namespace pathbench
