// One attention-op call of a model layer, recorded so that `pathbench op` can evaluate it again on
// any implementation: `inputs` in the form its --input takes (q, k, v, do [B, H, T, D]; w
// [B, H, T, D] and beta [B, H, T] for the Householder ops; g [B, H, T] per-token log forget gates
// for the gated ops; F64, exactly the values the model's kernels read), `outputs` in the form its
// --output writes (o, dq, dk, dv, and dw, dbeta, dg where the op has them): the model's own results
// of that call. Metadata of `inputs`: op, scale and the op's settings, and w_precision (fp32 or bf16:
// w's rows were normalized, then stored at that precision, so their norms are 1 only to it).
// Both devices' layers record through make_recorded_op_call.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/attention/encoding.h"
#include "core/attention/op_registry.h"
#include "core/io/safetensors.h"

namespace pathbench {

struct RecordedOpCall {
  std::string op;  // the registered attention op (op_registry.h)
  SafetensorsContent inputs, outputs;
};

// One call's values on the host: "q", "k", "v", "do", "o", "dq", "dk", "dv" [B, H, T, D] always;
// "w", "dw" [B, H, T, D] and "beta", "dbeta" [B, H, T] for the Householder ops; "cum" (the
// cumulative log gates the kernels read) and "dg" (the gradient with respect to the per-token log
// gates) [B, H, T] for the gated ones.
struct OpCallValues {
  std::string op;
  OpSettings settings;  // scale 0: 1/sqrt(D)
  AttentionDims dims;
  std::string w_precision;  // fp32 or bf16: how the model stored w (empty: exactly, in double)
  std::map<std::string, std::vector<double>> values;
};

// The record of those values; the cumulative gates become per-token gates by differences (exact in
// double, so `pathbench op`'s float64 cumulative sum gives the kernels' values back).
RecordedOpCall make_recorded_op_call(const OpCallValues& call);

}  // namespace pathbench
