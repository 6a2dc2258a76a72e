// A model's recorded attention call (core/attention/op_call_record.h; `pathbench replay
// --record-attention`) evaluated again by `pathbench op` on the CPU in float64 gives the float32
// model's own output and gradients for every registered encoding and layer, each encoding naming
// the op of its own name; a record without a backward or of a missing layer is refused.
#include <catch2/catch.hpp>

#include <string>

#include "core/attention/registry.h"
#include "core/error.h"
#include "core/model/transformer.h"
#include "core/optim/training_backend.h"
#include "experiments/attention_op.h"
#include "tests/model_checks.h"
#include "tests/op_record_support.h"
#include "tests/test_support.h"

namespace pathbench {
namespace {

using testing::op_options_for;
using testing::tiny_batch;
using testing::tiny_config;
using testing::worst_error;

TEST_CASE("A recorded CPU attention call evaluated again gives the model's outputs", "[encodings]") {
  for (const std::string& encoding : encoding_names()) {
    INFO(encoding);
    const ModelConfig config = tiny_config(encoding, "gelu");
    TrainingSetup setup;
    setup.init_seed = 3;
    auto backend = make_training_backend(config, setup, {"cpu", Precision::fp32, false});
    backend->step(tiny_batch(2, 70, config.vocab_size, 5));  // T = 70: two of PaTH's 64-token chunks
    for (int64_t layer = 0; layer < config.n_layers; ++layer) {
      INFO("layer " << layer);
      const RecordedOpCall call = backend->record_attention_call(layer);
      CHECK(call.op == encoding);
      // w's storage precision, only where the call has a w
      CHECK(call.inputs.metadata.count("w_precision") == call.inputs.tensors.count("w"));
      if (call.inputs.tensors.count("w")) CHECK(call.inputs.metadata.at("w_precision") == "fp32");
      const SafetensorsContent again = evaluate_attention_op(op_options_for(call), call.inputs, "record");
      CHECK(worst_error(again, call.outputs, "CPU op") <= 1e-4);
      CHECK(again.tensors.size() == call.outputs.tensors.size());
    }
  }
}

TEST_CASE("Recording a CPU attention call needs a backward and an existing layer", "[encodings]") {
  const ModelConfig config = tiny_config("path_fox", "gelu");
  auto backend = make_training_backend(config, TrainingSetup{}, {"cpu", Precision::fp32, false});
  const TokenBatch batch = tiny_batch(2, 9, config.vocab_size, 6);
  CHECK_THROWS_WITH(backend->record_attention_call(0), Catch::Contains("had no backward"));
  backend->step(batch);
  CHECK_NOTHROW(backend->record_attention_call(0));
  backend->predict(batch);  // a forward without a backward
  CHECK_THROWS_WITH(backend->record_attention_call(0), Catch::Contains("had no backward"));
  CHECK_THROWS_WITH(backend->record_attention_call(config.n_layers), Catch::Contains("the model has layers"));
}

}  // namespace
}  // namespace pathbench
