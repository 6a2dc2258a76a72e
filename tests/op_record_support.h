// The `pathbench op` options that evaluate a recorded attention call again (its op and the
// settings its metadata holds), for the CPU and [cuda] record tests.
#pragma once
#include <string>

#include "core/attention/op_call_record.h"
#include "experiments/attention_op.h"

namespace pathbench::testing {

inline AttentionOpOptions op_options_for(const RecordedOpCall& call) {
  AttentionOpOptions o;
  o.op = call.op;
  o.settings.gate_scale = std::stod(call.inputs.metadata.at("gate_scale"));
  o.settings.rope_base = std::stod(call.inputs.metadata.at("rope_base"));
  o.settings.remainder_to_current = call.inputs.metadata.at("remainder_to_current") == "true";
  return o;
}

}  // namespace pathbench::testing
