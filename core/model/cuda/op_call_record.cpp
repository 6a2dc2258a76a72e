// Recording an attention layer's op call: device tensors to F64 host tensors in `pathbench op`'s
// layout; the cumulative log gates back to per-token gates by differences, and their gradient to the
// per-token gates' by a reverse cumulative sum (both exact in double).
#include "core/model/cuda/op_call_record.h"

#include <fmt/format.h>

#include <cmath>
#include <type_traits>
#include <vector>

#include "core/cuda/check.h"

namespace pathbench::cuda {

namespace {

template <typename S>
std::vector<double> download(const S* device, int64_t n) {
  std::vector<S> host(static_cast<size_t>(n));
  PATHBENCH_CUDA_CHECK(cudaMemcpy(host.data(), device, size_t(n) * sizeof(S), cudaMemcpyDeviceToHost));
  std::vector<double> out(host.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = double(float(host[i]));
  return out;
}

// Per-token log gates g [rows, T] from the cumulative c: g_t = c_t − c_{t−1}, g_0 = c_0.
std::vector<double> gates_from_cumulative(std::vector<double> c, int64_t length) {
  for (size_t r = 0; r < c.size(); r += size_t(length))
    for (int64_t t = length - 1; t > 0; --t) c[r + t] -= c[r + t - 1];
  return c;
}

// d/dg from d/dc [rows, T]: dg_t = Σ_{u ≥ t} dc_u.
std::vector<double> reverse_cumulative_sum(std::vector<double> d, int64_t length) {
  for (size_t r = 0; r < d.size(); r += size_t(length))
    for (int64_t t = length - 2; t >= 0; --t) d[r + t] += d[r + t + 1];
  return d;
}

}  // namespace

template <typename S>
RecordedOpCall record_op_call(const Context& ctx, const AttentionDims& d, const LayerCallTensors<S>& layer,
                              const OpCallTensors<S>& encoding) {
  PATHBENCH_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));
  const std::vector<int64_t> full{d.batch, d.heads, d.length, d.head_dim}, per_token{d.batch, d.heads, d.length};
  const int64_t n = d.batch * d.heads * d.length * d.head_dim, rows = d.batch * d.heads * d.length;
  RecordedOpCall call;
  call.op = encoding.op;
  const auto put = [](SafetensorsContent& c, const char* name, const std::vector<double>& values,
                      const std::vector<int64_t>& shape) { c.tensors[name] = make_tensor(values.data(), shape); };
  put(call.inputs, "q", download(layer.q, n), full);
  put(call.inputs, "k", download(layer.k, n), full);
  put(call.inputs, "v", download(layer.v, n), full);
  put(call.inputs, "do", download(layer.d_o, n), full);
  put(call.outputs, "o", download(layer.o, n), full);
  put(call.outputs, "dq", download(layer.dq, n), full);
  put(call.outputs, "dk", download(layer.dk, n), full);
  put(call.outputs, "dv", download(layer.dv, n), full);
  if (encoding.w) {
    put(call.inputs, "w", download(encoding.w, n), full);
    put(call.inputs, "beta", download(encoding.beta, rows), per_token);
    put(call.outputs, "dw", download(encoding.dw, n), full);
    put(call.outputs, "dbeta", download(encoding.dbeta, rows), per_token);
  }
  if (encoding.cum_gate) {
    put(call.inputs, "g", gates_from_cumulative(download(encoding.cum_gate, rows), d.length), per_token);
    put(call.outputs, "dg", reverse_cumulative_sum(download(encoding.d_cum_gate, rows), d.length), per_token);
  }
  const OpSettings& s = encoding.settings;
  call.inputs.metadata = {{"op", encoding.op},
                          {"scale", fmt::format("{}", s.scale > 0 ? s.scale : 1.0 / std::sqrt(double(d.head_dim)))},
                          {"gate_scale", fmt::format("{}", s.gate_scale)},
                          {"rope_base", fmt::format("{}", s.rope_base)},
                          {"remainder_to_current", s.remainder_to_current ? "true" : "false"},
                          {"w_precision", std::is_same_v<S, float> ? "fp32" : "bf16"}};
  return call;
}

template RecordedOpCall record_op_call(const Context&, const AttentionDims&, const LayerCallTensors<float>&,
                                       const OpCallTensors<float>&);
template RecordedOpCall record_op_call(const Context&, const AttentionDims&, const LayerCallTensors<bf16>&,
                                       const OpCallTensors<bf16>&);

}  // namespace pathbench::cuda
