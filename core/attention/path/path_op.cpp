// The `path` and `path_fox` attention ops: PaTH attention on given w and β, the second with the
// forget-gate bias.
#include <vector>

#include "core/attention/op_registry.h"
#include "core/attention/path/path.h"

namespace pathbench {

namespace {

struct PathOp {
  template <typename T>
  static void run(const OpSettings& s, const OpTensors<T>& t) {
    std::vector<T> lse(t.batch_heads * t.length);  // [BH, T]
    const PathAttentionArgs<T> a{t.batch_heads, t.length, t.head_dim, t.scale, t.q, t.k, t.v, t.w, t.beta,
                                 t.cum_gate,    T(s.gate_scale)};
    path_attention_forward(a, t.o, lse.data());
    path_attention_backward(a, t.o, lse.data(), t.d_o, t.dq, t.dk, t.dv, t.dw, t.dbeta,
                            t.cum_gate ? t.d_cum_gate : nullptr);
  }
};

}  // namespace

AttentionOpInfo path_attention_op() {
  return make_attention_op<PathOp>("path", "PaTH attention: accumulated Householder-like transforms", true, false,
                                   {});
}

AttentionOpInfo path_fox_attention_op() {
  return make_attention_op<PathOp>("path_fox", "PaTH attention with the forget-gate bias", true, true,
                                   {"gate_scale"});
}

}  // namespace pathbench
