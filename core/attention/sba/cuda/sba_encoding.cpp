// The `sba` (stick-breaking) encoding on the GPU: the fused log-space kernels of sba_kernels.h.
#include "core/attention/cuda/gpu_encoding.h"
#include "core/attention/sba/cuda/sba_kernels.h"

namespace pathbench::cuda {

namespace {

template <typename S>
class StickBreakingEncoding : public PositionEncoding<S> {
 public:
  explicit StickBreakingEncoding(const EncodingSetup& setup)
      : ctx_(*setup.context), remainder_to_current_(setup.options.at("remainder_to_current").get<bool>()) {}

  bool reserve(const AttentionDims& dims, Pass pass) override {
    dims_ = dims;
    if (pass == Pass::forward) return false;
    return workspace_.reserve(std::max<size_t>(1, stick_breaking_backward_workspace_bytes(args(nullptr, nullptr, nullptr))));
  }

  void forward(CudaParameters&, const AttentionInputs<S>& in, S* o) override {
    stick_breaking_forward(args(in.q, in.k, in.v), o, ctx_.stream());
  }

  void backward(CudaParameters&, const AttentionInputs<S>& in, const S* o, const S* d_o, S* dq, S* dk, S* dv,
                float*) override {
    stick_breaking_backward(args(in.q, in.k, in.v), o, d_o, dq, dk, dv, Workspace{workspace_.data(), workspace_.size()},
                            ctx_.stream());
  }

  OpCallTensors<S> op_call() const override {
    OpCallTensors<S> call("sba");
    call.settings.remainder_to_current = remainder_to_current_;
    return call;
  }

 private:
  StickBreakingCudaArgs<S> args(const S* q, const S* k, const S* v) const {
    auto a = kernel_args<StickBreakingCudaArgs<S>>(dims_, q, k, v);
    a.remainder_to_current = remainder_to_current_;
    return a;
  }

  const Context& ctx_;
  bool remainder_to_current_;
  AttentionDims dims_;
  DeviceBuffer<char> workspace_{"stick-breaking backward workspace"};
};

}  // namespace

EncodingFactories sba_cuda_encoding() { return make_encoding_factories<StickBreakingEncoding>(); }

}  // namespace pathbench::cuda
