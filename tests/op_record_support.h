// For the CPU and [cuda] record tests: the `pathbench op` options that evaluate a recorded attention
// call again (its op and the settings its metadata holds), and how far the result is from the
// model's own outputs.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "core/attention/op_call_record.h"
#include "experiments/attention_op.h"
#include "tests/test_support.h"

namespace pathbench::testing {

inline AttentionOpOptions op_options_for(const RecordedOpCall& call) {
  AttentionOpOptions o;
  o.op = call.op;
  o.settings.gate_scale = std::stod(call.inputs.metadata.at("gate_scale"));
  o.settings.rope_base = std::stod(call.inputs.metadata.at("rope_base"));
  o.settings.remainder_to_current = call.inputs.metadata.at("remainder_to_current") == "true";
  return o;
}

// The largest relative error of any tensor of `got` against the model's outputs (which it must all
// have), each tensor's error reported.
inline double worst_error(const SafetensorsContent& got, const SafetensorsContent& model, const std::string& what) {
  double worst = 0;
  for (const auto& [name, tensor] : model.tensors) {
    INFO(what << ": tensor " << name);
    REQUIRE(got.tensors.count(name) == 1);
    const double e = relative_error(tensor_values<double>(got.tensors.at(name), name),
                                    tensor_values<double>(tensor, name));
    UNSCOPED_INFO(what << " " << name << ": relative error " << e);
    worst = std::max(worst, e);
  }
  return worst;
}

}  // namespace pathbench::testing
