// make_recorded_op_call: one attention call's host values as `pathbench op` input and output tensors.
#include "core/attention/op_call_record.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace pathbench {

namespace {

// Per-token log gates g [rows, T] from the cumulative c: g_t = c_t − c_{t−1}, g_0 = c_0.
std::vector<double> gates_from_cumulative(std::vector<double> c, int64_t length) {
  for (size_t r = 0; r < c.size(); r += size_t(length))
    for (int64_t t = length - 1; t > 0; --t) c[r + t] -= c[r + t - 1];
  return c;
}

}  // namespace

RecordedOpCall make_recorded_op_call(const OpCallValues& call) {
  const AttentionDims& d = call.dims;
  const std::vector<int64_t> full{d.batch, d.heads, d.length, d.head_dim}, per_token{d.batch, d.heads, d.length};
  const auto value = [&](const char* name) -> const std::vector<double>& {
    const auto it = call.values.find(name);
    if (it == call.values.end()) throw std::logic_error(fmt::format("recorded attention call: no '{}'", name));
    return it->second;
  };
  RecordedOpCall rec;
  rec.op = call.op;
  for (const char* name : {"q", "k", "v", "do"}) rec.inputs.tensors[name] = make_tensor(value(name).data(), full);
  for (const char* name : {"o", "dq", "dk", "dv"}) rec.outputs.tensors[name] = make_tensor(value(name).data(), full);
  if (call.values.count("w")) {
    rec.inputs.tensors["w"] = make_tensor(value("w").data(), full);
    rec.inputs.tensors["beta"] = make_tensor(value("beta").data(), per_token);
    rec.outputs.tensors["dw"] = make_tensor(value("dw").data(), full);
    rec.outputs.tensors["dbeta"] = make_tensor(value("dbeta").data(), per_token);
  }
  if (call.values.count("cum")) {
    rec.inputs.tensors["g"] = make_tensor(gates_from_cumulative(value("cum"), d.length).data(), per_token);
    rec.outputs.tensors["dg"] = make_tensor(value("dg").data(), per_token);
  }
  const OpSettings& s = call.settings;
  rec.inputs.metadata = {{"op", call.op},
                         {"scale", fmt::format("{}", s.scale > 0 ? s.scale : 1.0 / std::sqrt(double(d.head_dim)))},
                         {"gate_scale", fmt::format("{}", s.gate_scale)},
                         {"rope_base", fmt::format("{}", s.rope_base)},
                         {"remainder_to_current", s.remainder_to_current ? "true" : "false"}};
  if (!call.w_precision.empty() && call.values.count("w")) rec.inputs.metadata["w_precision"] = call.w_precision;
  return rec;
}

}  // namespace pathbench
