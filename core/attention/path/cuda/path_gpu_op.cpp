// The `path` and `path_fox` attention ops on the GPU: the fused blocked-UT PaTH kernels. The
// forward's workspace holds the log-sum-exp, then the kernels' own forward workspace (chunk factors,
// span transforms, moved keys) that the backward reads.
#include "core/attention/cuda/gpu_op.h"
#include "core/attention/path/cuda/path_kernels.h"

namespace pathbench::cuda {

namespace {

template <typename S, bool Gated>
struct PathGpuOp {
  static PathAttentionCudaArgs<S> args(const OpSettings& s, const GpuOpTensors<S>& t) {
    PathAttentionCudaArgs<S> a;
    a.batch_heads = t.batch_heads, a.length = t.length, a.head_dim = t.head_dim, a.scale = t.scale;
    a.q = t.q, a.k = t.k, a.v = t.v, a.w = t.w, a.beta = t.beta;
    a.cum_log_gate = Gated ? t.cum_gate : nullptr;
    a.gate_scale = Gated ? float(s.gate_scale) : 1.f;
    a.span_chunks = s.path_span_chunks;
    return a;
  }
  static size_t forward_workspace_bytes(const OpSettings& s, const GpuOpTensors<S>& t) {
    return lse_workspace_bytes(t) + path_attention_forward_workspace_bytes(args(s, t));
  }
  static size_t backward_workspace_bytes(const OpSettings& s, const GpuOpTensors<S>& t) {
    return path_attention_backward_workspace_bytes(args(s, t));
  }
  static void forward(const OpSettings& s, const GpuOpTensors<S>& t, Workspace f, cudaStream_t stream) {
    path_attention_forward(args(s, t), t.o, lse_in(f), workspace_rest(f, lse_workspace_bytes(t)), stream);
  }
  static void backward(const OpSettings& s, const GpuOpTensors<S>& t, Workspace f, Workspace b, cudaStream_t stream) {
    path_attention_backward(args(s, t), t.o, lse_in(f), workspace_rest(f, lse_workspace_bytes(t)), t.d_o, t.dq, t.dk,
                            t.dv, t.dw, t.dbeta, Gated ? t.d_cum_gate : nullptr, b, stream);
  }
};

template <typename S>
using PlainPathGpuOp = PathGpuOp<S, false>;
template <typename S>
using PathFoxGpuOp = PathGpuOp<S, true>;

}  // namespace

GpuOps path_gpu_ops() { return make_gpu_ops<PlainPathGpuOp>(); }
GpuOps path_fox_gpu_ops() { return make_gpu_ops<PathFoxGpuOp>(); }

}  // namespace pathbench::cuda
