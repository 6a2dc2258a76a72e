// Downloads one attention layer's last op call from the device into a RecordedOpCall
// (core/attention/op_call_record.h): the layer's q, k, v, o, the output gradient and dq, dk, dv, and
// the encoding's own tensors (OpCallTensors). Synchronizes the context's stream.
#pragma once
#include "core/attention/cuda/gpu_encoding.h"
#include "core/attention/op_call_record.h"

namespace pathbench::cuda {

// The layer's device tensors, each [B, H, T, D] in S.
template <typename S>
struct LayerCallTensors {
  const S *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  const S *d_o = nullptr, *dq = nullptr, *dk = nullptr, *dv = nullptr;
};

template <typename S>
RecordedOpCall record_op_call(const Context& ctx, const AttentionDims& dims, const LayerCallTensors<S>& layer,
                              const OpCallTensors<S>& encoding);

}  // namespace pathbench::cuda
