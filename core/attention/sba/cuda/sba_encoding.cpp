// The `sba` (stick-breaking) encoding on the GPU: the fused log-space kernels of sba_kernels.h; owns
// the row sums the forward keeps for the backward and the backward's workspace.
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
    const StickBreakingCudaArgs<S> a = args(nullptr, nullptr, nullptr);
    const bool moved = saved_.reserve(stick_breaking_saved_bytes(a));
    if (pass == Pass::forward) return moved;
    return moved | workspace_.reserve(std::max<size_t>(1, stick_breaking_backward_workspace_bytes(a)));
  }

  void forward(CudaParameters&, const AttentionInputs<S>& in, S* o) override {
    stick_breaking_forward(args(in.q, in.k, in.v), o, Workspace{saved_.data(), saved_.size()}, ctx_.stream());
  }

  void backward(CudaParameters&, const AttentionInputs<S>& in, const S*, const S* d_o, S* dq, S* dk, S* dv,
                float*) override {
    stick_breaking_backward(args(in.q, in.k, in.v), Workspace{saved_.data(), saved_.size()}, d_o, dq, dk, dv,
                            Workspace{workspace_.data(), workspace_.size()}, ctx_.stream());
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
  DeviceBuffer<char> saved_{"stick-breaking row softplus sums"};  // sba_kernels.h's saved values, forward → backward
  DeviceBuffer<char> workspace_{"stick-breaking backward workspace"};
};

}  // namespace

EncodingFactories sba_cuda_encoding() { return make_encoding_factories<StickBreakingEncoding>(); }

}  // namespace pathbench::cuda
