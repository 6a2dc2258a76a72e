// The `rope` attention op on the GPU: rotated copies of q and k (kept in the forward's workspace
// after the log-sum-exp), the fused softmax kernels on them, and the query and key gradients
// rotated back.
#include "core/attention/rope/cuda/rope_kernels.h"
#include "core/attention/softmax/cuda/softmax_gpu_op.h"

namespace pathbench::cuda {

namespace {

template <typename S>
struct RopeGpuOp {
  using Softmax = SoftmaxGpuOp<S, false>;
  static size_t copy_bytes(const GpuOpTensors<S>& t) {
    return workspace_head(size_t(t.batch_heads * t.length * t.head_dim) * sizeof(S));
  }
  // The rotated queries and keys [BH, T, D] in the forward's workspace.
  static S* rotated(Workspace f, const GpuOpTensors<S>& t, int which) {
    return reinterpret_cast<S*>(static_cast<char*>(f.data) + lse_workspace_bytes(t) + which * copy_bytes(t));
  }

  static size_t forward_workspace_bytes(const OpSettings&, const GpuOpTensors<S>& t) {
    return lse_workspace_bytes(t) + 2 * copy_bytes(t);
  }
  static size_t backward_workspace_bytes(const OpSettings& s, const GpuOpTensors<S>& t) {
    return Softmax::backward_workspace_bytes(s, t);
  }
  static void forward(const OpSettings& s, const GpuOpTensors<S>& t, Workspace f, cudaStream_t stream) {
    S *q = rotated(f, t, 0), *k = rotated(f, t, 1);
    rope_rotate_copy_pair(t.q, q, t.k, k, t.batch_heads, t.length, t.head_dim, s.rope_base, false, 0, stream);
    softmax_attention_forward(Softmax::args(s, t, q, k), t.o, lse_in(f), stream);
  }
  static void backward(const OpSettings& s, const GpuOpTensors<S>& t, Workspace f, Workspace b, cudaStream_t stream) {
    softmax_attention_backward(Softmax::args(s, t, rotated(f, t, 0), rotated(f, t, 1)), t.o, lse_in(f), t.d_o,
                               t.dq, t.dk, t.dv, nullptr, b, stream);
    rope_rotate_copy_pair<S>(t.dq, t.dq, t.dk, t.dk, t.batch_heads, t.length, t.head_dim, s.rope_base, true, 0, stream);
  }
};

}  // namespace

GpuOps rope_gpu_ops() { return make_gpu_ops<RopeGpuOp>(); }

}  // namespace pathbench::cuda
