// One attention op on tensors from a safetensors file (`pathbench op`): the output and every input
// gradient for a given output gradient, so other implementations can be checked against ours.
//
// Input tensors (one dtype, F32 or F64, computed in that precision on the CPU): q, k, v and do (the
// output gradient), each [..., T, D] (leading dimensions are independent slices); w [..., T, D] with
// unit rows and beta [..., T] in [0, 2] for path and path_fox; g [..., T] per-token log forget gates
// for fox and path_fox (the op takes their cumulative sum). Output tensors: o, dq, dk, dv, and dw,
// dbeta, dg where the op has those inputs. The ops are those of core/attention/op_registry.h.
// The metadata key w_precision (fp32 or bf16), which a model's recorded call carries
// (core/attention/op_call_record.h), says w's unit rows were stored at that precision: their norms
// are then checked to its rounding only. On the GPU (device cuda) the op runs its CUDA kernels with
// fp32 or bf16 storage (attention_op_gpu.h).
#pragma once
#include <string>
#include <vector>

#include "core/attention/op_registry.h"
#include "core/io/safetensors.h"
#include "core/precision.h"

namespace pathbench {

struct AttentionOpOptions {
  std::string op;  // a registered op: nope, rope, fox, sba, path, path_fox, …
  OpSettings settings;
  std::string device = "cpu";             // cpu | cuda
  Precision precision = Precision::fp32;  // cuda: storage of the [..., T, D] tensors, fp32 or bf16
};

// Validates `input` (errors name `where` and the tensor) and evaluates the op.
SafetensorsContent evaluate_attention_op(const AttentionOpOptions& options, const SafetensorsContent& input,
                                         const std::string& where);

}  // namespace pathbench
