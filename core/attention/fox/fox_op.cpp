// The `fox` attention op: causal softmax attention with the forget-gate bias g·(c_i − c_j).
#include "core/attention/softmax/softmax_op.h"

namespace pathbench {

namespace {

struct FoxOp {
  template <typename T>
  static void run(const OpSettings& s, const OpTensors<T>& t) {
    run_softmax_attention_op(t, T(s.gate_scale));
  }
};

}  // namespace

AttentionOpInfo fox_attention_op() {
  return make_attention_op<FoxOp>("fox", "causal softmax attention with the forget-gate bias", false, true,
                                  {"gate_scale"});
}

}  // namespace pathbench
