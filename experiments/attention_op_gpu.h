// `pathbench op --device cuda`: one attention op's forward and backward through its GPU kernels
// (the registry's gpu_float / gpu_bf16 entries, the kernels the GPU encodings run), from host
// tensors: the inputs are stored on the device in fp32 or bf16 (β and the cumulative gates in fp32,
// as the models keep them), the outputs come back converted to T.
#pragma once
#include "core/attention/op_registry.h"
#include "core/precision.h"

namespace pathbench {

// Reads t's inputs (cum_gate: the cumulative gates) and writes its outputs. Throws pathbench::Error
// in a build without CUDA, without a visible GPU, for a precision other than fp32 and bf16, an op
// without a GPU implementation or a head dimension the kernels lack.
template <typename T>
void run_attention_op_on_gpu(const AttentionOpInfo& op, const OpSettings& settings, const OpTensors<T>& t,
                             Precision precision);

}  // namespace pathbench
