// Batch work done ahead of a GPU step (batch_preparation.h).
#include "core/model/batch_preparation.h"

#include "core/ops/embedding_plan.h"

namespace pathbench {

std::shared_ptr<const BatchPreparation> prepare_batch(const TokenBatch& batch, int64_t vocab, bool for_training) {
  check_batch(batch, vocab);
  auto p = std::make_shared<BatchPreparation>();
  p->vocab = vocab;
  if (for_training) {
    const int64_t n = batch.batch * batch.length;
    p->embedding_plan.resize(embedding_plan_layout(n, vocab).size);
    build_embedding_plan(batch.tokens.data(), n, vocab, p->embedding_plan.data());
  }
  return p;
}

const BatchPreparation* preparation_for(const TokenBatch& batch, int64_t vocab, bool for_training) {
  const BatchPreparation* p = batch.prepared.get();
  if (!p || p->vocab != vocab) return nullptr;
  // A training step needs the plan of the batch's shape: none was built for an evaluation, and a
  // batch reshaped since (which its holder should have reset) has a plan of another size.
  if (for_training && p->embedding_plan.size() != embedding_plan_layout(batch.batch * batch.length, vocab).size)
    return nullptr;
  return p;
}

}  // namespace pathbench
