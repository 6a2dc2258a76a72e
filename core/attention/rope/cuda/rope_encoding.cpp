// The `rope` encoding on the GPU: queries and keys rotated (rope_kernels.h), then fused softmax
// attention; the backward rotates dq and dk back.
#include "core/attention/softmax/cuda/softmax_encoding.h"
#include "core/attention/rope/cuda/rope_kernels.h"

namespace pathbench::cuda {

namespace {

template <typename S>
class RopeEncoding : public PositionEncoding<S> {
 public:
  explicit RopeEncoding(const EncodingSetup& setup)
      : ctx_(*setup.context), base_(setup.options.at("base").template get<double>()) {}

  bool reserve(const AttentionDims& dims, Pass pass) override {
    const size_t size = size_t(dims.batch * dims.heads * dims.length * dims.head_dim);
    return attention_.reserve(dims, pass) | q_rot_.reserve(size) | k_rot_.reserve(size);
  }

  void forward(CudaParameters&, const AttentionInputs<S>& in, S* o) override {
    const AttentionDims& d = in.dims;
    const int64_t bh = d.batch * d.heads;
    rope_rotate_copy_pair(in.q, q_rot_.data(), in.k, k_rot_.data(), bh, d.length, d.head_dim, base_, false, 0,
                          ctx_.stream());
    attention_.forward(ctx_, q_rot_.data(), k_rot_.data(), in.v, nullptr, 1.0f, o);
  }

  void backward(CudaParameters&, const AttentionInputs<S>& in, const S* o, const S* d_o, S* dq, S* dk, S* dv,
                float*) override {
    const AttentionDims& d = in.dims;
    const int64_t bh = d.batch * d.heads;
    attention_.backward(ctx_, q_rot_.data(), k_rot_.data(), in.v, nullptr, 1.0f, o, d_o, dq, dk, dv, nullptr);
    rope_rotate_copy_pair<S>(dq, dq, dk, dk, bh, d.length, d.head_dim, base_, true, 0, ctx_.stream());
  }

  OpCallTensors<S> op_call() const override {
    OpCallTensors<S> call("rope");
    call.settings.rope_base = base_;
    return call;
  }

 private:
  const Context& ctx_;
  double base_;
  SoftmaxAttentionRunner<S> attention_;
  DeviceBuffer<S> q_rot_{"rotated queries"}, k_rot_{"rotated keys"};  // [BH, T, D]
};

}  // namespace

EncodingFactories rope_cuda_encoding() { return make_encoding_factories<RopeEncoding>(); }

}  // namespace pathbench::cuda
