// The `nope` encoding on the GPU: fused causal softmax attention, no position information.
#include "core/attention/softmax/cuda/softmax_encoding.h"

namespace pathbench::cuda {

namespace {

template <typename S>
class NopeEncoding : public PositionEncoding<S> {
 public:
  explicit NopeEncoding(const EncodingSetup& setup) : ctx_(*setup.context) {}

  bool reserve(const AttentionDims& dims, Pass pass) override { return attention_.reserve(dims, pass); }

  void forward(CudaParameters&, const AttentionInputs<S>& in, S* o) override {
    attention_.forward(ctx_, in.q, in.k, in.v, nullptr, 1.0f, o);
  }

  void backward(CudaParameters&, const AttentionInputs<S>& in, const S* o, const S* d_o, S* dq, S* dk, S* dv,
                float*) override {
    attention_.backward(ctx_, in.q, in.k, in.v, nullptr, 1.0f, o, d_o, dq, dk, dv, nullptr);
  }

  OpCallTensors<S> op_call() const override { return OpCallTensors<S>("nope"); }

 private:
  const Context& ctx_;
  SoftmaxAttentionRunner<S> attention_;
};

}  // namespace

EncodingFactories nope_cuda_encoding() { return make_encoding_factories<NopeEncoding>(); }

}  // namespace pathbench::cuda
