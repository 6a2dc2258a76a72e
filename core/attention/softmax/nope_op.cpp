// The `nope` attention op: causal softmax attention with no position information.
#include "core/attention/softmax/softmax_op.h"

namespace pathbench {

namespace {

struct NopeOp {
  template <typename T>
  static void run(const OpSettings&, const OpTensors<T>& t) {
    run_softmax_attention_op(t, T(1));
  }
};

}  // namespace

AttentionOpInfo nope_attention_op() {
  return make_attention_op<NopeOp>("nope", "causal softmax attention", false, false, {});
}

}  // namespace pathbench
