// One attention-op call of a model layer, recorded so that `pathbench op` can evaluate it again on
// any implementation: `inputs` in the form its --input takes (q, k, v, do [B, H, T, D]; w
// [B, H, T, D] and beta [B, H, T] for the Householder ops; g [B, H, T] per-token log forget gates
// for the gated ops; F64, exactly the values the model's kernels read), `outputs` in the form its
// --output writes (o, dq, dk, dv, and dw, dbeta, dg where the op has them): the model's own results
// of that call. Metadata of `inputs`: op, scale and the op's settings, and w_precision (fp32 or bf16:
// w's rows were normalized, then stored at that precision, so their norms are 1 only to it).
#pragma once
#include <string>

#include "core/io/safetensors.h"

namespace pathbench {

struct RecordedOpCall {
  std::string op;  // the registered attention op (op_registry.h)
  SafetensorsContent inputs, outputs;
};

}  // namespace pathbench
