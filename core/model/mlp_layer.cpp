// MLP block forward and backward (SwiGLU or GELU).
#include "core/model/mlp_layer.h"

#include <cmath>

#include "core/params/init.h"
#include "core/ops/activations.h"
#include "core/ops/linear.h"

namespace pathbench {

template <typename T>
MlpLayer<T>::MlpLayer(ParameterSet<T>& params, const std::string& prefix, const ModelConfig& config)
    : swiglu_(config.mlp == "swiglu"),
      width_(config.d_model),
      hidden_(config.hidden()),
      init_std_(config.init_std),
      out_init_std_(config.init_std / std::sqrt(2.0 * double(config.n_layers))) {
  w_in_ = params.add(prefix + (swiglu_ ? "w_gate" : "w_in"), {hidden_, width_});
  if (swiglu_) w_up_ = params.add(prefix + "w_up", {hidden_, width_});
  w_out_ = params.add(prefix + (swiglu_ ? "w_down" : "w_out"), {width_, hidden_});
}

template <typename T>
void MlpLayer<T>::init_parameters(ParameterSet<T>& params, uint64_t seed) {
  init_normal(params, w_in_, seed, init_std_);
  if (swiglu_) init_normal(params, w_up_, seed, init_std_);
  init_normal(params, w_out_, seed, out_init_std_);
}

template <typename T>
void MlpLayer<T>::forward(ParameterSet<T>& params, const T* x, T* y, int64_t n) {
  n_ = n;
  x_ = x;
  const int64_t size = n * hidden_;
  a_.resize(size);
  h_.resize(size);
  linear_forward(x, params.value(w_in_), a_.data(), n, width_, hidden_);
  if (swiglu_) {
    b_.resize(size);
    linear_forward(x, params.value(w_up_), b_.data(), n, width_, hidden_);
    swiglu_forward(a_.data(), b_.data(), h_.data(), size);
  } else {
    gelu_forward(a_.data(), h_.data(), size);
  }
  linear_forward(h_.data(), params.value(w_out_), y, n, hidden_, width_);
}

template <typename T>
void MlpLayer<T>::backward(ParameterSet<T>& params, const T* dy, T* dx) {
  const int64_t n = n_, size = n * hidden_;
  dh_.resize(size);
  da_.resize(size);
  linear_backward(h_.data(), params.value(w_out_), dy, dh_.data(), params.grad(w_out_), n, hidden_, width_);
  if (swiglu_) {
    db_.resize(size);
    swiglu_backward(a_.data(), b_.data(), dh_.data(), da_.data(), db_.data(), size);
    linear_backward(x_, params.value(w_up_), db_.data(), dx, params.grad(w_up_), n, width_, hidden_, true);
  } else {
    gelu_backward(a_.data(), dh_.data(), da_.data(), size);
  }
  linear_backward(x_, params.value(w_in_), da_.data(), dx, params.grad(w_in_), n, width_, hidden_, true);
}

template class MlpLayer<float>;
template class MlpLayer<double>;

}  // namespace pathbench
