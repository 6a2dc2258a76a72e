// Batch work done ahead of a GPU step (core/model/batch_preparation.h): it checks the batch as
// check_batch does, builds the embedding plan build_embedding_plan builds (for training only), and
// serves only steps of its vocabulary and pass.
#include <catch2/catch.hpp>

#include <string>

#include "core/error.h"
#include "core/model/batch_preparation.h"
#include "core/ops/embedding_plan.h"
#include "tests/model_checks.h"

namespace pathbench {
namespace {

TEST_CASE("A batch prepared ahead holds its check and, for training, its embedding plan") {
  const int64_t vocab = 11;
  TokenBatch batch = testing::tiny_batch(3, 70, vocab, 41);
  const int64_t n = batch.batch * batch.length;

  batch.prepared = prepare_batch(batch, vocab, true);
  std::vector<int32_t> plan(embedding_plan_layout(n, vocab).size);
  build_embedding_plan(batch.tokens.data(), n, vocab, plan.data());
  CHECK(batch.prepared->embedding_plan == plan);
  CHECK(preparation_for(batch, vocab, true) == batch.prepared.get());
  CHECK(preparation_for(batch, vocab, false) == batch.prepared.get());  // a forward needs no plan
  CHECK(preparation_for(batch, vocab + 1, true) == nullptr);           // another model's vocabulary

  TokenBatch reshaped = batch;  // its holder forgot to reset the preparation
  reshaped.batch = 2, reshaped.length = 35;
  CHECK(preparation_for(reshaped, vocab, true) == nullptr);

  batch.prepared = prepare_batch(batch, vocab, false);
  CHECK(batch.prepared->embedding_plan.empty());
  CHECK(preparation_for(batch, vocab, false) == batch.prepared.get());
  CHECK(preparation_for(batch, vocab, true) == nullptr);  // no plan for a training step

  batch.prepared.reset();
  CHECK(preparation_for(batch, vocab, false) == nullptr);
}

TEST_CASE("Preparing a bad batch ahead fails as the step's own check does") {
  const int64_t vocab = 8;
  TokenBatch batch = testing::tiny_batch(2, 16, vocab, 5);
  batch.tokens[19] = int32_t(vocab);
  std::string expected;
  try {
    check_batch(batch, vocab);
  } catch (const Error& e) {
    expected = e.what();
  }
  REQUIRE_FALSE(expected.empty());
  for (const bool training : {true, false}) {
    INFO("for training " << training);
    CHECK_THROWS_WITH(prepare_batch(batch, vocab, training), expected);
  }
}

}  // namespace
}  // namespace pathbench
