// The `sba` attention op: stick-breaking attention in log space.
#include "core/attention/op_registry.h"
#include "core/attention/sba/sba.h"

namespace pathbench {

namespace {

struct StickBreakingOp {
  template <typename T>
  static void run(const OpSettings& s, const OpTensors<T>& t) {
    const StickBreakingArgs<T> a{t.batch_heads, t.length, t.head_dim, t.scale, t.q, t.k, t.v, s.remainder_to_current};
    stick_breaking_forward(a, t.o);
    stick_breaking_backward(a, t.o, t.d_o, t.dq, t.dk, t.dv);
  }
};

}  // namespace

AttentionOpInfo sba_attention_op() {
  return make_attention_op<StickBreakingOp>("sba", "stick-breaking attention", false, false,
                                            {"remainder_to_current"});
}

}  // namespace pathbench
