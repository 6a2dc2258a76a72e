// GPU MLP block forward and backward (SwiGLU or GELU), mirroring mlp_layer.cpp.
#include "core/model/cuda/mlp_layer.h"

#include <stdexcept>

#include "core/ops/cuda/ops.h"

namespace pathbench::cuda {

MlpLayer::MlpLayer(Context& ctx, CudaParameters& params, const std::string& prefix, const ModelConfig& config)
    : ctx_(ctx),
      params_(params),
      swiglu_(config.mlp == "swiglu"),
      width_(config.d_model),
      hidden_(config.hidden()),
      inputs_(swiglu_ ? 2 * hidden_ : hidden_) {
  const ParameterSet<float>& layout = params.layout();
  w_in_ = layout.find(prefix + (swiglu_ ? "w_gate" : "w_in"));
  w_out_ = layout.find(prefix + (swiglu_ ? "w_down" : "w_out"));
  if (swiglu_ &&
      layout.entry(layout.find(prefix + "w_up")).offset != layout.entry(w_in_).offset + size_t(hidden_ * width_))
    throw std::logic_error("GPU MLP layer: " + prefix + "w_gate and w_up are not adjacent in the parameter buffer");
}

bool MlpLayer::reserve(int64_t n, Pass pass) {
  const bool training = pass == Pass::training, bf16_mode = ctx_.precision() == Precision::bf16;
  bool moved = pre_.reserve(size_t(n * inputs_), ctx_.precision());
  if (training) moved |= dh_.reserve(size_t(n * hidden_), ctx_.precision());
  // Only the activation and gradient buffers of the context's precision exist (the others stay
  // null), so the activation kernels write just those and the products read them.
  moved |= bf16_mode ? h16_.reserve(size_t(n * hidden_)) : h_.reserve(size_t(n * hidden_));
  if (training) moved |= bf16_mode ? d_pre16_.reserve(size_t(n * inputs_)) : d_pre_.reserve(size_t(n * inputs_));
  return moved;
}

void MlpLayer::forward(MatrixInput x, float* y, int64_t n) {
  n_ = n;
  x_ = x;
  const int64_t f = hidden_;
  cudaStream_t s = ctx_.stream();
  linear_forward(ctx_, x, params_.weight(w_in_), pre_, n, width_, inputs_);
  const auto activate = [&](const auto* pre) {
    if (swiglu_)
      swiglu_forward(pre, pre + f, inputs_, h_.data(), n, f, s, h16_.data());
    else
      gelu_forward(pre, h_.data(), n * f, s, h16_.data());
  };
  if (pre_.b16())
    activate(pre_.b16());
  else
    activate(pre_.f32());
  linear_forward(ctx_, {h_.data(), h16_.data()}, params_.weight(w_out_), y, n, f, width_, true);
}

void MlpLayer::backward(MatrixInput dy, float* dx) {
  const int64_t n = n_, f = hidden_;
  cudaStream_t s = ctx_.stream();
  linear_backward(ctx_, {h_.data(), h16_.data()}, params_.weight(w_out_), dy, dh_, n, f, width_);
  float* d32 = d_pre_.data();
  bf16* d16 = d_pre16_.data();
  const auto activation_backward = [&](const auto* pre, const auto* dh) {  // both fp32 or both bf16
    if (swiglu_)
      swiglu_backward(pre, pre + f, inputs_, dh, d32, d32 ? d32 + f : nullptr, n, f, s, d16, d16 ? d16 + f : nullptr);
    else
      gelu_backward(pre, dh, d32, n * f, s, d16);
  };
  if (pre_.b16())
    activation_backward(pre_.b16(), dh_.b16());
  else
    activation_backward(pre_.f32(), dh_.f32());
  linear_backward(ctx_, x_, params_.weight(w_in_), {d32, d16}, dx, n, width_, inputs_);
}

}  // namespace pathbench::cuda
