// A GPU model's recorded attention call (`pathbench replay --record-attention`) evaluated again by
// `pathbench op`: on the GPU it gives the model's own output and gradients, on the CPU in float64
// the same within the precision's bound, for every encoding at fp32 and bf16; a recording without
// a backward or of a missing layer is refused. Run with `pathbench_tests --require-gpu "[cuda]"`.
#ifdef PATHBENCH_WITH_CUDA
#include <catch2/catch.hpp>

#include <string>

#include "core/error.h"
#include "core/optim/training_backend.h"
#include "experiments/attention_op.h"
#include "tests/cuda_test_support.h"
#include "tests/op_record_support.h"
#include "tests/test_support.h"

namespace pathbench {
namespace {

using namespace cuda_testing;
using testing::worst_error;

// `pathbench op` options for a recorded call, on `device`.
AttentionOpOptions options_for(const RecordedOpCall& call, const std::string& device, Precision precision) {
  AttentionOpOptions o = testing::op_options_for(call);
  o.device = device;
  o.precision = precision;
  return o;
}

TEST_CASE("A recorded GPU attention call evaluated again gives the model's outputs", "[cuda]") {
  for (const std::string& encoding : cuda_encodings())
    for (const Precision precision : {Precision::fp32, Precision::bf16}) {
      INFO(encoding << " " << precision_name(precision));
      auto backend =
          make_training_backend(small_training_config(encoding), small_training_setup(), {"cuda", precision, true});
      for (int step = 0; step < 3; ++step) backend->step(make_batch(4, 64, 8, 900 + step, true));  // graph replays
      const RecordedOpCall call = backend->record_attention_call(0);
      CHECK(call.op == encoding);
      CHECK(call.inputs.metadata.count("w_precision") == call.inputs.tensors.count("w"));
      if (call.inputs.tensors.count("w"))
        CHECK(call.inputs.metadata.at("w_precision") == (precision == Precision::bf16 ? "bf16" : "fp32"));
      // The same kernels on the same inputs: equal up to the order of atomic additions.
      const SafetensorsContent gpu = evaluate_attention_op(options_for(call, "cuda", precision), call.inputs, "record");
      CHECK(worst_error(gpu, call.outputs, "GPU op") <= (precision == Precision::bf16 ? 2e-3 : 1e-5));
      // float64 on the CPU: within the bound of the precision's rounding of intermediate products.
      const SafetensorsContent cpu = evaluate_attention_op(options_for(call, "cpu", precision), call.inputs, "record");
      CHECK(worst_error(cpu, call.outputs, "CPU op") <= (precision == Precision::bf16 ? 3e-2 : 1e-4));
    }
}

TEST_CASE("Recording an attention call needs a training step and an existing layer", "[cuda]") {
  auto backend = make_training_backend(small_training_config("path"), small_training_setup(),
                                       {"cuda", Precision::fp32, true});
  const TokenBatch batch = make_batch(4, 64, 8, 950, true);
  backend->predict(batch);
  CHECK_THROWS_AS(backend->record_attention_call(0), Error);
  backend->step(batch);
  CHECK_THROWS_AS(backend->record_attention_call(1), Error);
  CHECK_THROWS_AS(backend->record_attention_call(-1), Error);
  CHECK_NOTHROW(backend->record_attention_call(0));
}

}  // namespace
}  // namespace pathbench
#endif
