// Multi-head attention block: projections, head split/merge, the position encoding.
#include "core/model/attention_layer.h"

#include <fmt/format.h>

#include <cmath>
#include <type_traits>

#include "core/attention/registry.h"
#include "core/error.h"
#include "core/ops/head_layout.h"
#include "core/params/init.h"
#include "core/ops/linear.h"

namespace pathbench {

template <typename T>
AttentionLayer<T>::AttentionLayer(ParameterSet<T>& params, const std::string& prefix, const ModelConfig& config)
    : encoding_name_(config.encoding),
      init_std_(config.init_std),
      out_init_std_(config.init_std / std::sqrt(2.0 * double(config.n_layers))) {
  dims_.width = config.d_model;
  dims_.heads = config.n_heads;
  dims_.head_dim = config.head_dim();
  const int64_t hd = dims_.heads * dims_.head_dim, c = dims_.width;
  wq_ = params.add(prefix + "wq", {hd, c});
  wk_ = params.add(prefix + "wk", {hd, c});
  wv_ = params.add(prefix + "wv", {hd, c});
  wo_ = params.add(prefix + "wo", {c, hd});
  EncodingSetup<T> setup{config.encoding_options, dims_, prefix, &params, config.init_std};
  encoding_ = make_encoding<T>(config.encoding, config.encoding_options, setup, "model.encoding_options");
}

template <typename T>
void AttentionLayer<T>::init_parameters(ParameterSet<T>& params, uint64_t seed) {
  for (auto id : {wq_, wk_, wv_}) init_normal(params, id, seed, init_std_);
  init_normal(params, wo_, seed, out_init_std_);
  encoding_->init_parameters(params, seed);
}

template <typename T>
void AttentionLayer<T>::forward(ParameterSet<T>& params, const T* x, T* y, int64_t batch, int64_t length) {
  dims_.batch = batch;
  dims_.length = length;
  x_ = x;
  backward_done_ = false;
  const int64_t n = batch * length, c = dims_.width, h = dims_.heads, d = dims_.head_dim, size = n * h * d;
  for (auto* buf : {&q_, &k_, &v_, &o_, &flat_}) buf->resize(size);
  const std::pair<typename ParameterSet<T>::Id, std::vector<T>*> projections[] = {{wq_, &q_}, {wk_, &k_}, {wv_, &v_}};
  for (const auto& [w, out] : projections) {
    linear_forward(x, params.value(w), flat_.data(), n, c, h * d);
    split_heads(flat_.data(), out->data(), batch, length, h, d);
  }
  AttentionInputs<T> in{dims_, x, q_.data(), k_.data(), v_.data()};
  encoding_->forward(params, in, o_.data());
  merge_heads(o_.data(), flat_.data(), batch, length, h, d);
  linear_forward(flat_.data(), params.value(wo_), y, n, h * d, c);
}

template <typename T>
void AttentionLayer<T>::backward(ParameterSet<T>& params, const T* dy, T* dx) {
  const int64_t batch = dims_.batch, length = dims_.length, n = batch * length, c = dims_.width, h = dims_.heads,
                d = dims_.head_dim, size = n * h * d;
  for (auto* buf : {&dq_, &dk_, &dv_, &do_}) buf->resize(size);
  // flat_ still holds the merged encoding output from forward.
  std::vector<T>& d_flat = dq_;  // borrowed as [B, T, H·D] scratch before dq is computed
  linear_backward(flat_.data(), params.value(wo_), dy, d_flat.data(), params.grad(wo_), n, h * d, c);
  split_heads(d_flat.data(), do_.data(), batch, length, h, d);
  AttentionInputs<T> in{dims_, x_, q_.data(), k_.data(), v_.data()};
  encoding_->backward(params, in, o_.data(), do_.data(), dq_.data(), dk_.data(), dv_.data(), dx);
  const std::pair<typename ParameterSet<T>::Id, std::vector<T>*> grads[] = {{wq_, &dq_}, {wk_, &dk_}, {wv_, &dv_}};
  for (const auto& [w, g] : grads) {
    merge_heads(g->data(), flat_.data(), batch, length, h, d);
    linear_backward(x_, params.value(w), flat_.data(), dx, params.grad(w), n, c, h * d, true);
  }
  backward_done_ = true;
}

template <typename T>
RecordedOpCall AttentionLayer<T>::record_op_call() const {
  const OpCallView<T> enc = encoding_->op_call();
  if (enc.op.empty())
    throw Error(fmt::format("encoding '{}' does not say which attention op it computes, so its calls cannot be "
                            "recorded",
                            encoding_name_));
  if (!backward_done_) throw Error("attention call: the last forward had no backward, so there is nothing to record");
  const size_t n = q_.size(), rows = n / size_t(dims_.head_dim);
  OpCallValues call{enc.op, enc.settings, dims_, std::is_same_v<T, float> ? "fp32" : "", {}};
  const auto put = [&](const char* name, const T* p, size_t count) { call.values[name].assign(p, p + count); };
  put("q", q_.data(), n), put("k", k_.data(), n), put("v", v_.data(), n), put("o", o_.data(), n);
  put("do", do_.data(), n), put("dq", dq_.data(), n), put("dk", dk_.data(), n), put("dv", dv_.data(), n);
  if (enc.w) put("w", enc.w, n), put("dw", enc.dw, n), put("beta", enc.beta, rows), put("dbeta", enc.dbeta, rows);
  if (enc.cum_gate) put("cum", enc.cum_gate, rows), put("dg", enc.d_log_gate, rows);
  return make_recorded_op_call(call);
}

template <typename T>
std::unique_ptr<DecodeCache> AttentionLayer<T>::start_decode(int64_t batch) const {
  AttentionDims dims = dims_;
  dims.batch = batch;
  dims.length = 0;
  return encoding_->start_decode(dims);
}

template <typename T>
void AttentionLayer<T>::decode_step(ParameterSet<T>& params, DecodeCache& cache, const T* x, T* y, int64_t batch) {
  AttentionDims dims = dims_;
  dims.batch = batch;
  const int64_t c = dims.width, hd = dims.heads * dims.head_dim;
  // With one token per sequence, [B, H·D] is already the per-head layout [B, H, D].
  std::vector<T> q(batch * hd), k(batch * hd), v(batch * hd), o(batch * hd);
  linear_forward(x, params.value(wq_), q.data(), batch, c, hd);
  linear_forward(x, params.value(wk_), k.data(), batch, c, hd);
  linear_forward(x, params.value(wv_), v.data(), batch, c, hd);
  encoding_->decode_step(params, cache, DecodeInputs<T>{dims, x, q.data(), k.data(), v.data()}, o.data());
  linear_forward(o.data(), params.value(wo_), y, batch, hd, c);
}

template class AttentionLayer<float>;
template class AttentionLayer<double>;

}  // namespace pathbench
