// The `sba` attention op on the GPU: the fused log-space stick-breaking kernels (the forward keeps
// each row's softplus sum in its workspace for the backward).
#include "core/attention/cuda/gpu_op.h"
#include "core/attention/sba/cuda/sba_kernels.h"

namespace pathbench::cuda {

namespace {

template <typename S>
struct StickBreakingGpuOp {
  static StickBreakingCudaArgs<S> args(const OpSettings& s, const GpuOpTensors<S>& t) {
    return StickBreakingCudaArgs<S>{t.batch_heads, t.length, t.head_dim, t.scale,
                                    t.q,           t.k,      t.v,        s.remainder_to_current};
  }
  static size_t forward_workspace_bytes(const OpSettings& s, const GpuOpTensors<S>& t) {
    return stick_breaking_saved_bytes(args(s, t));
  }
  static size_t backward_workspace_bytes(const OpSettings& s, const GpuOpTensors<S>& t) {
    return stick_breaking_backward_workspace_bytes(args(s, t));
  }
  static void forward(const OpSettings& s, const GpuOpTensors<S>& t, Workspace f, cudaStream_t stream) {
    stick_breaking_forward(args(s, t), t.o, f, stream);
  }
  static void backward(const OpSettings& s, const GpuOpTensors<S>& t, Workspace f, Workspace b, cudaStream_t stream) {
    stick_breaking_backward(args(s, t), f, t.d_o, t.dq, t.dk, t.dv, b, stream);
  }
};

}  // namespace

GpuOps sba_gpu_ops() { return make_gpu_ops<StickBreakingGpuOp>(); }

}  // namespace pathbench::cuda
