// Drawing a batch's examples, and batching them into the model's TokenBatch: sequences padded at
// the end to the longest one (padding has weight 0; causal attention keeps it from affecting real
// positions).
#pragma once
#include <vector>

#include "core/model/batch.h"
#include "tasks/task.h"

namespace pathbench {

// Examples first … first + count − 1 of `split` under `seed`, drawn on all OpenMP threads (a held-out
// sequence takes several draws, so an evaluation's examples can cost more than the model's forward
// pass). Each is a pure function of its index: the result does not depend on the thread count. The
// exception of the first example that failed, if any, is rethrown after the loop.
std::vector<Example> draw_examples(const Task& task, const std::string& split, uint64_t seed, int64_t first,
                                   int64_t count);

// Weights are the examples' loss masks.
TokenBatch collate(const std::vector<Example>& examples);

}  // namespace pathbench
