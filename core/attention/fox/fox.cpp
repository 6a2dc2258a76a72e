// FoX: the forget-gate ops, the ForgetGate component, and the `fox` encoding (softmax attention
// with the cumulative log-gate bias, no other position information).
#include "core/attention/fox/fox.h"

#include <cmath>

#include "core/attention/kernel_args.h"
#include "core/attention/registry_entry.h"
#include "core/attention/softmax/softmax_attention.h"
#include "core/params/init.h"
#include "core/ops/linear.h"
#include "core/ops/scalar_functions.h"

namespace pathbench {

namespace {

// Default gate bias: σ(5) ≈ 0.9933, so every gate starts near 1 (log f ≈ −0.0067 per token, an
// attention half-life of about 100 tokens at initialization); the projection weights start small.
constexpr double kGateBiasInit = 5.0;

}  // namespace

template <typename T>
void forget_gate_log_forward(const T* x, const T* weight, const T* bias, T* pre, T* log_gate, int64_t batch,
                             int64_t length, int64_t heads, int64_t width) {
  linear_forward(x, weight, pre, batch * length, width, heads);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < length; ++t)
      for (int64_t h = 0; h < heads; ++h) {
        T& p = pre[(b * length + t) * heads + h];
        p += bias[h];
        log_gate[(b * heads + h) * length + t] = log_sigmoid(p);
      }
}

template <typename T>
void forget_gate_log_backward(const T* x, const T* weight, const T* pre, const T* d_log_gate, T* d_pre,
                              T* d_weight, T* d_bias, T* dx, int64_t batch, int64_t length, int64_t heads,
                              int64_t width) {
  // d logσ(a)/da = σ(−a)
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < length; ++t)
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t i = (b * length + t) * heads + h;
        d_pre[i] = d_log_gate[(b * heads + h) * length + t] * sigmoid(-pre[i]);
      }
  for (int64_t n = 0; n < batch * length; ++n)
    for (int64_t h = 0; h < heads; ++h) d_bias[h] += d_pre[n * heads + h];
  linear_backward(x, weight, d_pre, dx, d_weight, batch * length, width, heads, true);
}

template <typename T>
void cumulative_sum(const T* log_gate, T* cum, int64_t slices, int64_t length) {
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < slices; ++s) {
    T acc = 0;
    for (int64_t t = 0; t < length; ++t) cum[s * length + t] = acc += log_gate[s * length + t];
  }
}

template <typename T>
void cumulative_sum_backward(const T* d_cum, T* d_log_gate, int64_t slices, int64_t length) {
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < slices; ++s) {
    T acc = 0;
    for (int64_t t = length - 1; t >= 0; --t) d_log_gate[s * length + t] = acc += d_cum[s * length + t];
  }
}

std::vector<OptionSpec> forget_gate_options() {
  return {{"gate_bias_init", OptionType::Float, kGateBiasInit,
           "initial forget-gate bias b: gates start at σ(b) (default 5: f ≈ 0.9933, near 1)"},
          {"scale_gate", OptionType::Bool, false,
           "also multiply the gate bias (c_i − c_j) by 1/sqrt(D), fla's PaTH-FoX convention"}};
}

template <typename T>
ForgetGate<T>::ForgetGate(const EncodingSetup<T>& setup)
    : init_std_(setup.init_std),
      bias_init_(setup.options.at("gate_bias_init").template get<double>()),
      gate_scale_(setup.options.at("scale_gate").template get<bool>() ? T(1) / std::sqrt(T(setup.dims.head_dim))
                                                                       : T(1)) {
  weight_ = setup.params->add(setup.prefix + "fox_gate_weight", {setup.dims.heads, setup.dims.width});
  bias_ = setup.params->add(setup.prefix + "fox_gate_bias", {setup.dims.heads}, false);
}

template <typename T>
void ForgetGate<T>::init_parameters(ParameterSet<T>& params, uint64_t seed) const {
  init_normal(params, weight_, seed, init_std_);
  init_constant(params, bias_, bias_init_);
}

template <typename T>
const T* ForgetGate<T>::forward(ParameterSet<T>& params, const T* x, const AttentionDims& d) {
  pre_.resize(d.batch * d.length * d.heads);
  cum_.resize(d.batch * d.heads * d.length);
  forget_gate_log_forward(x, params.value(weight_), params.value(bias_), pre_.data(), cum_.data(), d.batch, d.length,
                          d.heads, d.width);
  cumulative_sum(cum_.data(), cum_.data(), d.batch * d.heads, d.length);
  return cum_.data();
}

template <typename T>
void ForgetGate<T>::backward(ParameterSet<T>& params, const T* x, const AttentionDims& d, T* d_cum, T* dx) {
  cumulative_sum_backward(d_cum, d_cum, d.batch * d.heads, d.length);
  d_pre_.resize(pre_.size());
  forget_gate_log_backward(x, params.value(weight_), pre_.data(), d_cum, d_pre_.data(), params.grad(weight_),
                           params.grad(bias_), dx, d.batch, d.length, d.heads, d.width);
}

template <typename T>
void ForgetGate<T>::decode_step(ParameterSet<T>& params, const T* x, const AttentionDims& d, T* cum) {
  std::vector<T> pre(d.batch * d.heads), log_gate(d.batch * d.heads);
  forget_gate_log_forward(x, params.value(weight_), params.value(bias_), pre.data(), log_gate.data(), d.batch,
                          int64_t(1), d.heads, d.width);
  for (size_t i = 0; i < log_gate.size(); ++i) cum[i] += log_gate[i];
}

template void forget_gate_log_forward<float>(const float*, const float*, const float*, float*, float*, int64_t,
                                             int64_t, int64_t, int64_t);
template void forget_gate_log_forward<double>(const double*, const double*, const double*, double*, double*, int64_t,
                                              int64_t, int64_t, int64_t);
template void forget_gate_log_backward<float>(const float*, const float*, const float*, const float*, float*, float*,
                                              float*, float*, int64_t, int64_t, int64_t, int64_t);
template void forget_gate_log_backward<double>(const double*, const double*, const double*, const double*, double*,
                                               double*, double*, double*, int64_t, int64_t, int64_t, int64_t);
template void cumulative_sum<float>(const float*, float*, int64_t, int64_t);
template void cumulative_sum<double>(const double*, double*, int64_t, int64_t);
template void cumulative_sum_backward<float>(const float*, float*, int64_t, int64_t);
template void cumulative_sum_backward<double>(const double*, double*, int64_t, int64_t);
template class ForgetGate<float>;
template class ForgetGate<double>;

namespace {

template <typename T>
class FoxEncoding : public PositionEncoding<T> {
 public:
  explicit FoxEncoding(const EncodingSetup<T>& setup) : gate_(setup) {}

  void init_parameters(ParameterSet<T>& params, uint64_t seed) override { gate_.init_parameters(params, seed); }

  void forward(ParameterSet<T>& params, const AttentionInputs<T>& in, T* o) override {
    const auto& d = in.dims;
    cum_ = gate_.forward(params, in.x, d);
    lse_.resize(d.batch * d.heads * d.length);
    softmax_attention_forward(args(in), o, lse_.data());
  }

  void backward(ParameterSet<T>& params, const AttentionInputs<T>& in, const T* o, const T* d_o, T* dq, T* dk, T* dv,
                T* dx) override {
    d_cum_.resize(lse_.size());
    softmax_attention_backward(args(in), o, lse_.data(), d_o, dq, dk, dv, d_cum_.data());
    gate_.backward(params, in.x, in.dims, d_cum_.data(), dx);
  }

  // After the backward, d_cum_ holds the gradient with respect to the per-token log gates.
  OpCallView<T> op_call() const override {
    OpCallView<T> call("fox");
    call.settings.gate_scale = double(gate_.gate_scale());
    call.cum_gate = cum_, call.d_log_gate = d_cum_.data();
    return call;
  }

 private:
  SoftmaxAttentionArgs<T> args(const AttentionInputs<T>& in) const {
    auto a = kernel_args<SoftmaxAttentionArgs<T>>(in.dims, in.q, in.k, in.v);
    a.cum_log_gate = cum_;
    a.gate_scale = gate_.gate_scale();
    return a;
  }

  ForgetGate<T> gate_;
  const T* cum_ = nullptr;   // [BH, T] the gate's cumulative log gates of the last forward
  std::vector<T> lse_;       // [BH, T]
  std::vector<T> d_cum_;     // [BH, T]
};

}  // namespace

EncodingInfo fox_encoding_info() {
  return make_encoding_info<FoxEncoding>(
      "fox", "forgetting attention: learned per-head forget gate, logit bias c_i − c_j, no other PE",
      forget_gate_options(), [](int64_t) { return std::string(); });
}

}  // namespace pathbench
