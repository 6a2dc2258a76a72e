// `pathbench op`: validation of the input tensors and evaluation of one attention op through the
// same kernels the encodings use.
#include "experiments/attention_op.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/attention/fox/fox.h"
#include "core/attention/path/path.h"
#include "core/attention/rope/rope.h"
#include "core/attention/sba/sba.h"
#include "core/attention/softmax/softmax_attention.h"
#include "core/error.h"

namespace pathbench {

namespace {

struct OpShape {
  std::vector<int64_t> per_token;  // [..., T], the shape of beta and g
  std::vector<int64_t> full;       // [..., T, D]
  int64_t slices = 1, length = 0, head_dim = 0;
};

std::vector<std::string> expected_inputs(const std::string& op) {
  std::vector<std::string> names = {"q", "k", "v", "do"};
  if (op == "path" || op == "path_fox") names.insert(names.end(), {"w", "beta"});
  if (op == "fox" || op == "path_fox") names.push_back("g");
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
OpInputs<T> read_inputs(const std::string& op, const SafetensorsContent& input, const std::string& where) {
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
    const T tolerance = std::is_same_v<T, float> ? T(1e-4) : T(1e-10);
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
SafetensorsContent evaluate(const AttentionOpOptions& opt, const SafetensorsContent& input, const std::string& where) {
  const OpInputs<T> in = read_inputs<T>(opt.op, input, where);
  const OpShape& sh = in.shape;
  const int64_t bh = sh.slices, len = sh.length, d = sh.head_dim, n = bh * len * d;
  const T scale = opt.scale > 0 ? T(opt.scale) : T(1) / std::sqrt(T(d));
  std::vector<T> o(n), dq(n), dk(n), dv(n), lse(bh * len);
  std::map<std::string, std::vector<T>> extra;  // dw, dbeta, dg
  const T *q = in.get("q"), *k = in.get("k"), *v = in.get("v"), *d_o = in.get("do");
  std::vector<T> cum, d_cum;
  if (in.values.count("g")) {
    cum.resize(bh * len);
    d_cum.resize(bh * len);
    cumulative_sum(in.get("g"), cum.data(), bh, len);
  }
  const T gate_scale = T(opt.gate_scale);
  if (opt.op == "nope" || opt.op == "fox" || opt.op == "rope") {
    std::vector<T> q_rot, k_rot;
    SoftmaxAttentionArgs<T> a{bh, len, d, scale, q, k, v, cum.empty() ? nullptr : cum.data(), gate_scale};
    if (opt.op == "rope") {
      if (d % 2 != 0) throw Error(fmt::format("{}: rope needs an even head dimension, got {}", where, d));
      q_rot.assign(q, q + n);
      k_rot.assign(k, k + n);
      rope_rotate(q_rot.data(), bh, len, d, opt.rope_base, false);
      rope_rotate(k_rot.data(), bh, len, d, opt.rope_base, false);
      a.q = q_rot.data();
      a.k = k_rot.data();
    }
    softmax_attention_forward(a, o.data(), lse.data());
    softmax_attention_backward(a, o.data(), lse.data(), d_o, dq.data(), dk.data(), dv.data(),
                               cum.empty() ? nullptr : d_cum.data());
    if (opt.op == "rope") {
      rope_rotate(dq.data(), bh, len, d, opt.rope_base, true);
      rope_rotate(dk.data(), bh, len, d, opt.rope_base, true);
    }
  } else if (opt.op == "sba") {
    StickBreakingArgs<T> a{bh, len, d, scale, q, k, v, opt.remainder_to_current};
    stick_breaking_forward(a, o.data());
    stick_breaking_backward(a, o.data(), d_o, dq.data(), dk.data(), dv.data());
  } else {  // path, path_fox
    PathAttentionArgs<T> a{bh, len, d, scale, q, k, v, in.get("w"), in.get("beta"),
                           cum.empty() ? nullptr : cum.data(), gate_scale};
    extra["dw"].resize(n);
    extra["dbeta"].resize(bh * len);
    path_attention_forward(a, o.data(), lse.data());
    path_attention_backward(a, o.data(), lse.data(), d_o, dq.data(), dk.data(), dv.data(), extra["dw"].data(),
                            extra["dbeta"].data(), cum.empty() ? nullptr : d_cum.data());
  }
  if (!cum.empty()) {
    extra["dg"].resize(bh * len);
    cumulative_sum_backward(d_cum.data(), extra["dg"].data(), bh, len);
  }
  SafetensorsContent out;
  out.metadata = {{"op", opt.op}, {"scale", fmt::format("{}", double(scale))}};
  if (!cum.empty()) out.metadata["gate_scale"] = fmt::format("{}", opt.gate_scale);
  if (opt.op == "rope") out.metadata["rope_base"] = fmt::format("{}", opt.rope_base);
  if (opt.op == "sba") out.metadata["remainder_to_current"] = opt.remainder_to_current ? "true" : "false";
  const std::pair<const char*, std::vector<T>*> full[] = {{"o", &o}, {"dq", &dq}, {"dk", &dk}, {"dv", &dv}};
  for (const auto& [name, values] : full) out.tensors[name] = make_tensor(values->data(), sh.full);
  for (const auto& [name, values] : extra)
    out.tensors[name] = make_tensor(values.data(), name == "dw" ? sh.full : sh.per_token);
  return out;
}

}  // namespace

const std::vector<std::string>& attention_op_names() {
  static const std::vector<std::string> names = {"nope", "rope", "fox", "sba", "path", "path_fox"};
  return names;
}

SafetensorsContent evaluate_attention_op(const AttentionOpOptions& options, const SafetensorsContent& input,
                                         const std::string& where) {
  const auto& names = attention_op_names();
  if (std::find(names.begin(), names.end(), options.op) == names.end())
    throw Error(fmt::format("op: unknown op '{}' (known: {})", options.op, fmt::join(names, ", ")));
  const std::vector<std::string> expected = expected_inputs(options.op);
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
  return dtype == "F32" ? evaluate<float>(options, input, where) : evaluate<double>(options, input, where);
}

}  // namespace pathbench
