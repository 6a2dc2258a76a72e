// `pathbench op`: validation of the input tensors against a registered attention op, and its
// evaluation through the same kernels the encodings use.
#include "experiments/attention_op.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/attention/fox/fox.h"
#include "core/error.h"
#include "experiments/attention_op_gpu.h"

namespace pathbench {

namespace {

struct OpShape {
  std::vector<int64_t> per_token;  // [..., T], the shape of beta and g
  std::vector<int64_t> full;       // [..., T, D]
  int64_t slices = 1, length = 0, head_dim = 0;
};

std::vector<std::string> expected_inputs(const AttentionOpInfo& op) {
  std::vector<std::string> names = {"q", "k", "v", "do"};
  if (op.householder) names.insert(names.end(), {"w", "beta"});
  if (op.gated) names.push_back("g");
  return names;
}

// The inputs as T, validated against the op: present, expected shape, one float dtype, finite.
template <typename T>
struct OpInputs {
  OpShape shape;
  std::map<std::string, std::vector<T>> values;
  const T* get(const std::string& name) const { return values.at(name).data(); }
};

template <typename T>
OpInputs<T> read_inputs(const AttentionOpInfo& op, const SafetensorsContent& input, const std::string& where) {
  OpInputs<T> in;
  const auto& q = input.tensors.at("q");
  if (q.shape.size() < 2 || element_count(q.shape) == 0)
    throw Error(fmt::format("{}: tensor 'q' has shape [{}]; expected [..., T, D] with T, D ≥ 1", where,
                            fmt::join(q.shape, ", ")));
  in.shape.full = q.shape;
  in.shape.per_token.assign(q.shape.begin(), q.shape.end() - 1);
  in.shape.head_dim = q.shape.back();
  in.shape.length = q.shape[q.shape.size() - 2];
  in.shape.slices = element_count(in.shape.per_token) / in.shape.length;
  for (const auto& name : expected_inputs(op)) {
    const TensorData& t = input.tensors.at(name);
    const auto& want = (name == "beta" || name == "g") ? in.shape.per_token : in.shape.full;
    if (t.shape != want)
      throw Error(fmt::format("{}: tensor '{}' has shape [{}], expected [{}]", where, name, fmt::join(t.shape, ", "),
                              fmt::join(want, ", ")));
    std::vector<T> values = tensor_values<T>(t, fmt::format("{}: tensor '{}'", where, name));
    for (size_t i = 0; i < values.size(); ++i)
      if (!std::isfinite(values[i]))
        throw Error(fmt::format("{}: tensor '{}' has a non-finite value at flat index {}", where, name, i));
    in.values[name] = std::move(values);
  }
  if (in.values.count("w")) {
    const auto stored = input.metadata.find("w_precision");
    const std::string w_precision = stored == input.metadata.end() ? "" : stored->second;
    if (!w_precision.empty() && w_precision != "fp32" && w_precision != "bf16")
      throw Error(fmt::format("{}: metadata w_precision is '{}' (fp32 or bf16)", where, w_precision));
    const T tolerance = w_precision == "bf16"                                   ? T(1e-2)
                        : w_precision == "fp32" || std::is_same_v<T, float> ? T(1e-4)
                                                                               : T(1e-10);
    const std::vector<T>& w = in.values["w"];
    const int64_t d = in.shape.head_dim;
    for (size_t r = 0; r < w.size() / d; ++r) {
      T sq = 0;
      for (int64_t e = 0; e < d; ++e) sq += w[r * d + e] * w[r * d + e];
      if (std::abs(std::sqrt(sq) - T(1)) > tolerance)
        throw Error(fmt::format("{}: tensor 'w' row {} has norm {} (must be 1 within {})", where, r, std::sqrt(sq),
                                tolerance));
    }
  }
  if (in.values.count("beta")) {
    const std::vector<T>& beta = in.values["beta"];
    for (size_t i = 0; i < beta.size(); ++i)
      if (beta[i] < 0 || beta[i] > 2)
        throw Error(fmt::format("{}: tensor 'beta' has value {} at flat index {} (must be in [0, 2])", where,
                                beta[i], i));
  }
  return in;
}

template <typename T>
SafetensorsContent evaluate(const AttentionOpInfo& op, const AttentionOpOptions& options, const SafetensorsContent& input,
                           const std::string& where) {
  const OpSettings& settings = options.settings;
  const OpInputs<T> in = read_inputs<T>(op, input, where);
  const OpShape& sh = in.shape;
  const std::string problem = op.head_dim_problem(sh.head_dim);
  if (!problem.empty()) throw Error(fmt::format("{}: head dimension {}: {}", where, sh.head_dim, problem));
  const int64_t bh = sh.slices, len = sh.length, d = sh.head_dim, n = bh * len * d;
  std::vector<T> o(n), dq(n), dk(n), dv(n);  // [BH, T, D]
  std::map<std::string, std::vector<T>> extra;  // dw [BH, T, D]; dbeta, dg [BH, T]
  OpTensors<T> t;
  t.batch_heads = bh, t.length = len, t.head_dim = d;
  t.scale = settings.scale > 0 ? T(settings.scale) : T(1) / std::sqrt(T(d));
  t.q = in.get("q"), t.k = in.get("k"), t.v = in.get("v"), t.d_o = in.get("do");
  t.o = o.data(), t.dq = dq.data(), t.dk = dk.data(), t.dv = dv.data();
  if (op.householder) {
    t.w = in.get("w"), t.beta = in.get("beta");
    extra["dw"].resize(n);
    extra["dbeta"].resize(bh * len);
    t.dw = extra["dw"].data(), t.dbeta = extra["dbeta"].data();
  }
  std::vector<T> cum, d_cum;  // [BH, T] cumulative log gates and their gradient
  if (op.gated) {
    cum.resize(bh * len);
    d_cum.resize(bh * len);
    cumulative_sum(in.get("g"), cum.data(), bh, len);
    t.cum_gate = cum.data(), t.d_cum_gate = d_cum.data();
  }
  if (options.device == "cuda")
    run_attention_op_on_gpu(op, settings, t, options.precision);
  else if constexpr (std::is_same_v<T, float>)
    op.cpu_float(settings, t);
  else
    op.cpu_double(settings, t);
  if (op.gated) {
    extra["dg"].resize(bh * len);
    cumulative_sum_backward(d_cum.data(), extra["dg"].data(), bh, len);
  }
  SafetensorsContent out;
  out.metadata = {{"op", op.name}, {"scale", fmt::format("{}", double(t.scale))}, {"device", options.device}};
  if (options.device == "cuda") out.metadata["precision"] = precision_name(options.precision);
  if (op.uses_setting("gate_scale")) out.metadata["gate_scale"] = fmt::format("{}", settings.gate_scale);
  if (op.uses_setting("rope_base")) out.metadata["rope_base"] = fmt::format("{}", settings.rope_base);
  if (op.uses_setting("remainder_to_current"))
    out.metadata["remainder_to_current"] = settings.remainder_to_current ? "true" : "false";
  const std::pair<const char*, std::vector<T>*> full[] = {{"o", &o}, {"dq", &dq}, {"dk", &dk}, {"dv", &dv}};
  for (const auto& [name, values] : full) out.tensors[name] = make_tensor(values->data(), sh.full);
  for (const auto& [name, values] : extra)
    out.tensors[name] = make_tensor(values.data(), name == "dw" ? sh.full : sh.per_token);
  return out;
}

}  // namespace

SafetensorsContent evaluate_attention_op(const AttentionOpOptions& options, const SafetensorsContent& input,
                                         const std::string& where) {
  const AttentionOpInfo& op = find_attention_op(options.op);
  const std::vector<std::string> expected = expected_inputs(op);
  for (const auto& name : expected)
    if (!input.tensors.count(name))
      throw Error(fmt::format("{}: tensor '{}' is missing (op {} needs {})", where, name, options.op,
                              fmt::join(expected, ", ")));
  for (const auto& [name, t] : input.tensors)
    if (std::find(expected.begin(), expected.end(), name) == expected.end())
      throw Error(fmt::format("{}: tensor '{}' is not an input of op {} (it takes {})", where, name, options.op,
                              fmt::join(expected, ", ")));
  const std::string dtype = input.tensors.at("q").dtype;
  for (const auto& name : expected) {
    const std::string& dt = input.tensors.at(name).dtype;
    if (dt != "F32" && dt != "F64")
      throw Error(fmt::format("{}: tensor '{}' has dtype {} (use F32 or F64)", where, name, dt));
    if (dt != dtype)
      throw Error(fmt::format("{}: tensor '{}' has dtype {} but 'q' has {} (all inputs share one dtype)", where, name,
                              dt, dtype));
  }
  return dtype == "F32" ? evaluate<float>(op, options, input, where) : evaluate<double>(op, options, input, where);
}

}  // namespace pathbench
