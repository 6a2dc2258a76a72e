// GPU MLP block forward and backward (SwiGLU or GELU), mirroring mlp_layer.cpp.
#include "core/model/cuda/mlp_layer.h"

#include "core/ops/cuda/linear.h"
#include "core/ops/cuda/ops.h"

namespace pathbench::cuda {

MlpLayer::MlpLayer(Context& ctx, CudaParameters& params, const std::string& prefix, const ModelConfig& config)
    : ctx_(ctx), params_(params), swiglu_(config.mlp == "swiglu"), width_(config.d_model), hidden_(config.hidden()) {
  const ParameterSet<float>& layout = params.layout();
  w_in_ = layout.find(prefix + (swiglu_ ? "w_gate" : "w_in"));
  if (swiglu_) w_up_ = layout.find(prefix + "w_up");
  w_out_ = layout.find(prefix + (swiglu_ ? "w_down" : "w_out"));
}

bool MlpLayer::reserve(int64_t n) {
  const size_t size = size_t(n * hidden_);
  bool moved = false;
  for (auto* buf : {&a_, &da_, &dh_}) moved |= buf->reserve(size);
  moved |= ctx_.precision() == Precision::bf16 ? h16_.reserve(size) : h_.reserve(size);
  if (swiglu_)
    for (auto* buf : {&b_, &db_}) moved |= buf->reserve(size);
  return moved;
}

// Only the activation buffer of the context's precision is reserved (the other stays null), so the
// activation kernels write just that one and the products read it.
void MlpLayer::forward(MatrixInput x, float* y, int64_t n) {
  n_ = n;
  x_ = x;
  const int64_t size = n * hidden_;
  linear_forward(ctx_, x, params_.weight(w_in_), a_.data(), n, width_, hidden_);
  if (swiglu_) {
    linear_forward(ctx_, x, params_.weight(w_up_), b_.data(), n, width_, hidden_);
    swiglu_forward(a_.data(), b_.data(), h_.data(), size, ctx_.stream(), h16_.data());
  } else {
    gelu_forward(a_.data(), h_.data(), size, ctx_.stream(), h16_.data());
  }
  linear_forward(ctx_, {h_.data(), h16_.data()}, params_.weight(w_out_), y, n, hidden_, width_, true);
}

void MlpLayer::backward(const float* dy, float* dx) {
  const int64_t n = n_, size = n * hidden_;
  linear_backward(ctx_, {h_.data(), h16_.data()}, params_.weight(w_out_), {dy}, dh_.data(), n, hidden_, width_);
  if (swiglu_) {
    swiglu_backward(a_.data(), b_.data(), dh_.data(), da_.data(), db_.data(), size, ctx_.stream());
    linear_backward(ctx_, x_, params_.weight(w_up_), {db_.data()}, dx, n, width_, hidden_);
    linear_backward(ctx_, x_, params_.weight(w_in_), {da_.data()}, dx, n, width_, hidden_, true);
  } else {
    gelu_backward(a_.data(), dh_.data(), da_.data(), size, ctx_.stream());
    linear_backward(ctx_, x_, params_.weight(w_in_), {da_.data()}, dx, n, width_, hidden_);
  }
}

}  // namespace pathbench::cuda
