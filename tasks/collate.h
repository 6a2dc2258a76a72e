// Batching of examples into the model's TokenBatch: sequences padded at the end to the longest
// one (padding has weight 0; causal attention keeps it from affecting real positions).
#pragma once
#include <vector>

#include "core/model/batch.h"
#include "tasks/task.h"

namespace pathbench {

// Weights are the examples' loss masks.
TokenBatch collate(const std::vector<Example>& examples);

}  // namespace pathbench
