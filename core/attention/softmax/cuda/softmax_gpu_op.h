// Causal softmax attention as a GPU op (gpu_op.h), with the gate bias when Gated: the nope and fox
// ops, and the attention part of rope. The forward's workspace holds the log-sum-exp (gpu_op.h).
#pragma once
#include "core/attention/cuda/gpu_op.h"
#include "core/attention/softmax/cuda/softmax_kernels.h"

namespace pathbench::cuda {

template <typename S, bool Gated>
struct SoftmaxGpuOp {
  static SoftmaxAttentionCudaArgs<S> args(const OpSettings& s, const GpuOpTensors<S>& t, const S* q, const S* k) {
    return SoftmaxAttentionCudaArgs<S>{t.batch_heads, t.length, t.head_dim, t.scale,
                                       q,             k,        t.v,        Gated ? t.cum_gate : nullptr,
                                       Gated ? float(s.gate_scale) : 1.f};
  }
  static size_t forward_workspace_bytes(const OpSettings&, const GpuOpTensors<S>& t) {
    return lse_workspace_bytes(t);
  }
  static size_t backward_workspace_bytes(const OpSettings& s, const GpuOpTensors<S>& t) {
    return softmax_attention_backward_workspace_bytes(args(s, t, t.q, t.k));
  }
  static void forward(const OpSettings& s, const GpuOpTensors<S>& t, Workspace f, cudaStream_t stream) {
    softmax_attention_forward(args(s, t, t.q, t.k), t.o, lse_in(f), stream);
  }
  static void backward(const OpSettings& s, const GpuOpTensors<S>& t, Workspace f, Workspace b, cudaStream_t stream) {
    softmax_attention_backward(args(s, t, t.q, t.k), t.o, lse_in(f), t.d_o, t.dq, t.dk, t.dv,
                               Gated ? t.d_cum_gate : nullptr, b, stream);
  }
};

}  // namespace pathbench::cuda
