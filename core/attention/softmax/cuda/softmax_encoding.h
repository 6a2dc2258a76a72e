// The fused softmax-attention kernels (softmax_kernels.h) as the GPU encodings nope, rope and
// fox use them: owns the per-row log-sum-exp kept for backward and the backward workspace, both
// sized by reserve() so forward and backward only queue work (CUDA graph capture).
#pragma once
#include "core/attention/cuda/gpu_encoding.h"
#include "core/attention/softmax/cuda/softmax_kernels.h"

namespace pathbench::cuda {

template <typename S>
class SoftmaxAttentionRunner {
 public:
  bool reserve(const AttentionDims& d, Pass pass) {
    dims_ = d;
    const bool moved = lse_.reserve(size_t(d.batch * d.heads * d.length));
    if (pass == Pass::forward) return moved;
    SoftmaxAttentionCudaArgs<S> a = args(nullptr, nullptr, nullptr, nullptr, 1.0f);
    return moved | workspace_.reserve(std::max<size_t>(1, softmax_attention_backward_workspace_bytes(a)));
  }

  // cum_log_gate: [BH, T] or null (no bias); o: [BH, T, D].
  void forward(const Context& ctx, const S* q, const S* k, const S* v, const float* cum_log_gate, float gate_scale,
               S* o) {
    softmax_attention_forward(args(q, k, v, cum_log_gate, gate_scale), o, lse_.data(), ctx.stream());
  }

  // dq, dk, dv overwritten; d_cum_log_gate [BH, T] overwritten when the gate is on.
  void backward(const Context& ctx, const S* q, const S* k, const S* v, const float* cum_log_gate, float gate_scale,
                const S* o, const S* d_o, S* dq, S* dk, S* dv, float* d_cum_log_gate) {
    softmax_attention_backward(args(q, k, v, cum_log_gate, gate_scale), o, lse_.data(), d_o, dq, dk, dv,
                               d_cum_log_gate, Workspace{workspace_.data(), workspace_.size()}, ctx.stream());
  }

 private:
  SoftmaxAttentionCudaArgs<S> args(const S* q, const S* k, const S* v, const float* gate, float gate_scale) const {
    auto a = kernel_args<SoftmaxAttentionCudaArgs<S>>(dims_, q, k, v);
    a.cum_log_gate = gate;
    a.gate_scale = gate_scale;
    return a;
  }

  AttentionDims dims_;
  DeviceBuffer<float> lse_{"attention log-sum-exp"};       // [BH, T]
  DeviceBuffer<char> workspace_{"attention backward workspace"};
};

}  // namespace pathbench::cuda
