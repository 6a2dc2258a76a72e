// The `rope` attention op: queries and keys rotated, softmax attention, and the gradients of the
// rotated queries and keys rotated back.
#include <vector>

#include "core/attention/rope/rope.h"
#include "core/attention/softmax/softmax_op.h"

namespace pathbench {

namespace {

struct RopeOp {
  template <typename T>
  static void run(const OpSettings& s, const OpTensors<T>& t) {
    const size_t n = size_t(t.batch_heads * t.length * t.head_dim);
    std::vector<T> q(t.q, t.q + n), k(t.k, t.k + n);  // [BH, T, D] rotated copies
    rope_rotate(q.data(), t.batch_heads, t.length, t.head_dim, s.rope_base, false);
    rope_rotate(k.data(), t.batch_heads, t.length, t.head_dim, s.rope_base, false);
    OpTensors<T> rotated = t;
    rotated.q = q.data();
    rotated.k = k.data();
    run_softmax_attention_op(rotated, T(1));
    rope_rotate(t.dq, t.batch_heads, t.length, t.head_dim, s.rope_base, true);
    rope_rotate(t.dk, t.batch_heads, t.length, t.head_dim, s.rope_base, true);
  }
};

}  // namespace

AttentionOpInfo rope_attention_op() {
  return make_attention_op<RopeOp>(
      "rope", "rotary position embedding on q and k, then causal softmax attention", false, false, {"rope_base"},
      rope_head_dim_problem);
}

}  // namespace pathbench
