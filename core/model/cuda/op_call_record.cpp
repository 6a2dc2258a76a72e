// Recording a GPU attention layer's op call: the device tensors downloaded into double, the
// gradient of the cumulative gates turned into the per-token gates' (the gate's own cumulative-sum
// backward, exact in double), then core/attention/op_call_record.h's record.
#include "core/model/cuda/op_call_record.h"

#include <type_traits>
#include <vector>

#include "core/attention/fox/fox.h"
#include "core/cuda/buffer.h"

namespace pathbench::cuda {

template <typename S>
RecordedOpCall record_op_call(const Context& ctx, const AttentionDims& d, const LayerCallTensors<S>& layer,
                              const OpCallTensors<S>& encoding) {
  const size_t n = size_t(d.batch * d.heads * d.length * d.head_dim), rows = size_t(d.batch * d.heads * d.length);
  // Queued on the model's stream after its last step, so each copy waits for that step's kernels.
  const auto download = [&](const auto* device, size_t count) {
    std::vector<double> host(count);
    copy_to_host_as(host.data(), device, count, ctx.stream());
    return host;
  };
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
    v["dg"] = download(encoding.d_cum_gate, rows);
    cumulative_sum_backward(v["dg"].data(), v["dg"].data(), d.batch * d.heads, d.length);
  }
  return make_recorded_op_call(call);
}

template RecordedOpCall record_op_call(const Context&, const AttentionDims&, const LayerCallTensors<float>&,
                                       const OpCallTensors<float>&);
template RecordedOpCall record_op_call(const Context&, const AttentionDims&, const LayerCallTensors<bf16>&,
                                       const OpCallTensors<bf16>&);

}  // namespace pathbench::cuda
