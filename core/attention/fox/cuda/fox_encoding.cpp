// FoX on the GPU: the forget gate (projection through cuda::linear_*, scan kernels of fox_kernels.cu) and
// the `fox` encoding (fused softmax attention with the gate bias, no other position information).
#include "core/attention/fox/cuda/forget_gate.h"

#include <cmath>

#include "core/attention/softmax/cuda/softmax_encoding.h"
#include "core/attention/fox/cuda/fox_kernels.h"
#include "core/ops/cuda/linear.h"
#include "core/ops/cuda/ops.h"

namespace pathbench::cuda {

ForgetGate::ForgetGate(const EncodingSetup& setup)
    : ctx_(*setup.context),
      weight_(setup.layout->find(setup.prefix + "fox_gate_weight")),
      bias_(setup.layout->find(setup.prefix + "fox_gate_bias")),
      gate_scale_(setup.options.at("scale_gate").get<bool>() ? 1.0f / std::sqrt(float(setup.dims.head_dim)) : 1.0f) {}

bool ForgetGate::reserve(const AttentionDims& d, Pass pass) {
  const size_t size = size_t(d.batch * d.length * d.heads);
  const bool moved = pre_.reserve(size) | cum_.reserve(size);
  if (pass == Pass::forward) return moved;
  return moved | d_pre_.reserve(size) | d_cum_.reserve(size) | scratch_.reserve(size_t(kColumnScratchPerColumn * d.heads));
}

const float* ForgetGate::forward(CudaParameters& params, MatrixInput x, const AttentionDims& d) {
  linear_forward(ctx_, x, params.weight(weight_), pre_.data(), d.batch * d.length, d.width, d.heads);
  forget_gate_forward(pre_.data(), params.value(bias_), cum_.data(), d.batch, d.length, d.heads, ctx_.stream());
  return cum_.data();
}

void ForgetGate::backward(CudaParameters& params, MatrixInput x, const AttentionDims& d, float* dx) {
  forget_gate_backward(pre_.data(), d_cum_.data(), d_pre_.data(), params.grad(bias_), scratch_.data(), d.batch,
                       d.length, d.heads, ctx_.stream());
  linear_backward(ctx_, x, params.weight(weight_), {d_pre_.data()}, dx, d.batch * d.length, d.width, d.heads, true);
}

namespace {

template <typename S>
class FoxEncoding : public PositionEncoding<S> {
 public:
  explicit FoxEncoding(const EncodingSetup& setup) : ctx_(*setup.context), gate_(setup) {}

  bool reserve(const AttentionDims& dims, Pass pass) override {
    return attention_.reserve(dims, pass) | gate_.reserve(dims, pass);
  }

  void forward(CudaParameters& params, const AttentionInputs<S>& in, S* o) override {
    cum_ = gate_.forward(params, {in.x, in.x16}, in.dims);
    attention_.forward(ctx_, in.q, in.k, in.v, cum_, gate_.gate_scale(), o);
  }

  void backward(CudaParameters& params, const AttentionInputs<S>& in, const S* o, const S* d_o, S* dq, S* dk, S* dv,
                float* dx) override {
    attention_.backward(ctx_, in.q, in.k, in.v, cum_, gate_.gate_scale(), o, d_o, dq, dk, dv, gate_.d_cum());
    gate_.backward(params, {in.x, in.x16}, in.dims, dx);
  }

  OpCallTensors<S> op_call() const override {
    OpCallTensors<S> call("fox");
    call.settings.gate_scale = gate_.gate_scale();
    call.cum_gate = cum_, call.d_cum_gate = gate_.d_cum();
    return call;
  }

 private:
  const Context& ctx_;
  ForgetGate gate_;
  SoftmaxAttentionRunner<S> attention_;
  const float* cum_ = nullptr;  // [B, H, T] of the last forward
};

}  // namespace

EncodingFactories fox_cuda_encoding() { return make_encoding_factories<FoxEncoding>(); }

}  // namespace pathbench::cuda
