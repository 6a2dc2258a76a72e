// Recording a GPU attention layer's op call: the device tensors downloaded into double, the
// gradient of the cumulative gates turned into the per-token gates' by a reverse cumulative sum
// (exact in double), then core/attention/op_call_record.h's record.
#include "core/model/cuda/op_call_record.h"

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
  const int64_t n = d.batch * d.heads * d.length * d.head_dim, rows = d.batch * d.heads * d.length;
  OpCallValues call{encoding.op, encoding.settings, d, std::is_same_v<S, float> ? "fp32" : "bf16", {}};
  auto& v = call.values;
  v["q"] = download(layer.q, n), v["k"] = download(layer.k, n), v["v"] = download(layer.v, n);
  v["do"] = download(layer.d_o, n), v["o"] = download(layer.o, n);
  v["dq"] = download(layer.dq, n), v["dk"] = download(layer.dk, n), v["dv"] = download(layer.dv, n);
  if (encoding.w) {
    v["w"] = download(encoding.w, n), v["dw"] = download(encoding.dw, n);
    v["beta"] = download(encoding.beta, rows), v["dbeta"] = download(encoding.dbeta, rows);
  }
  if (encoding.cum_gate) {
    v["cum"] = download(encoding.cum_gate, rows);
    v["dg"] = reverse_cumulative_sum(download(encoding.d_cum_gate, rows), d.length);
  }
  return make_recorded_op_call(call);
}

template RecordedOpCall record_op_call(const Context&, const AttentionDims&, const LayerCallTensors<float>&,
                                       const OpCallTensors<float>&);
template RecordedOpCall record_op_call(const Context&, const AttentionDims&, const LayerCallTensors<bf16>&,
                                       const OpCallTensors<bf16>&);

}  // namespace pathbench::cuda
