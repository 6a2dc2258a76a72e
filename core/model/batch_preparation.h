// Host work of a GPU step that depends only on its batch — the token check and the embedding
// backward's plan (core/ops/embedding_plan.h) — done ahead of the step and carried with the batch
// (TokenBatch::prepared), so that the worker drawing the next batch can do it while the device runs
// this step (TrainingBackend::prepare_ahead). A step whose batch carries no preparation, or one for
// another vocabulary or pass, does the work itself; the results are the same either way.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/model/batch.h"

namespace pathbench {

struct BatchPreparation {
  int64_t vocab = 0;                    // the batch passed check_batch against this vocabulary
  std::vector<int32_t> embedding_plan;  // [embedding_plan_layout(B·T, vocab).size]; empty unless for training
};

// Checks the batch (pathbench::Error as check_batch) and, for training, builds its embedding plan.
// Reads the batch only: may run on any thread.
std::shared_ptr<const BatchPreparation> prepare_batch(const TokenBatch& batch, int64_t vocab, bool for_training);

// The batch's preparation when it serves a step with this vocabulary (and, for training, holds the
// plan of the batch's shape); null otherwise.
const BatchPreparation* preparation_for(const TokenBatch& batch, int64_t vocab, bool for_training);

}  // namespace pathbench
