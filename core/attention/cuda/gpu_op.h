// The GPU side of an attention op (op_registry.h): forward and backward on device tensors with
// fp32 or bf16 storage S, and the workspaces they need. The forward's workspace holds what the
// backward reads (the log-sum-exp, rotated copies, PaTH's chunk factors) and must be kept from a
// forward to its backward; the backward has its own besides. Attached to the registry by
// gpu_op_registry.cpp; each op's implementation lives in its folder's cuda/
// (rope/cuda/rope_gpu_op.cpp, …).
#pragma once
#include <functional>
#include <memory>

#include "core/attention/cuda/kernel_common.h"
#include "core/attention/op_registry.h"

namespace pathbench::cuda {

// One call's device tensors: [BH, T, D] in S, per-token vectors [BH, T] in float.
template <typename S>
struct GpuOpTensors {
  int64_t batch_heads = 0, length = 0, head_dim = 0;  // BH, T, D
  float scale = 0;                                     // resolved logit scale s
  const S *q = nullptr, *k = nullptr, *v = nullptr, *d_o = nullptr;
  const S* w = nullptr;             // unit rows (ops with Householder inputs)
  const float* beta = nullptr;      // in [0, 2]
  const float* cum_gate = nullptr;  // cumulative log forget gates (gated ops)
  S *o = nullptr, *dq = nullptr, *dk = nullptr, *dv = nullptr, *dw = nullptr;  // overwritten
  float *dbeta = nullptr, *d_cum_gate = nullptr;                                // overwritten where taken
};

template <typename S>
struct GpuOp {
  // Workspace sizes for a call of this shape and these settings (only the shape fields are read).
  std::function<size_t(const OpSettings&, const GpuOpTensors<S>&)> forward_workspace_bytes, backward_workspace_bytes;
  std::function<void(const OpSettings&, const GpuOpTensors<S>&, Workspace forward, cudaStream_t)> forward;
  std::function<void(const OpSettings&, const GpuOpTensors<S>&, Workspace forward, Workspace backward, cudaStream_t)>
      backward;
};

struct GpuOps {
  std::shared_ptr<const GpuOp<float>> fp32_storage;
  std::shared_ptr<const GpuOp<bf16>> bf16_storage;
};

// Both storages from a class template Impl<S> with static forward_workspace_bytes,
// backward_workspace_bytes, forward and backward of the signatures above.
template <template <typename> class Impl>
GpuOps make_gpu_ops() {
  auto make = []<typename S>() {
    auto op = std::make_shared<GpuOp<S>>();
    op->forward_workspace_bytes = &Impl<S>::forward_workspace_bytes;
    op->backward_workspace_bytes = &Impl<S>::backward_workspace_bytes;
    op->forward = &Impl<S>::forward;
    op->backward = &Impl<S>::backward;
    return std::shared_ptr<const GpuOp<S>>(std::move(op));
  };
  return GpuOps{make.template operator()<float>(), make.template operator()<bf16>()};
}

// The first `bytes` of a workspace (rounded up to 256 so what follows stays aligned) and the rest.
inline size_t workspace_head(size_t bytes) { return (bytes + 255) / 256 * 256; }
inline Workspace workspace_rest(Workspace ws, size_t head) {
  return Workspace{static_cast<char*>(ws.data) + head, ws.bytes - head};
}

// The softmax-type ops keep their row log-sum-exp [BH, T] at the head of the forward's workspace.
template <typename S>
size_t lse_workspace_bytes(const GpuOpTensors<S>& t) {
  return workspace_head(size_t(t.batch_heads * t.length) * sizeof(float));
}
inline float* lse_in(Workspace forward) { return static_cast<float*>(forward.data); }

}  // namespace pathbench::cuda
