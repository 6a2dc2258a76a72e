// Causal softmax attention as an attention op (op_registry.h): forward, then backward for the given
// output gradient, with the gate bias when the tensors carry cumulative log gates. Shared by the
// nope, rope and fox ops.
#pragma once
#include <vector>

#include "core/attention/op_registry.h"
#include "core/attention/softmax/softmax_attention.h"

namespace pathbench {

template <typename T>
void run_softmax_attention_op(const OpTensors<T>& t, T gate_scale) {
  std::vector<T> lse(t.batch_heads * t.length);  // [BH, T]
  const SoftmaxAttentionArgs<T> a{t.batch_heads, t.length, t.head_dim, t.scale, t.q, t.k, t.v, t.cum_gate, gate_scale};
  softmax_attention_forward(a, t.o, lse.data());
  softmax_attention_backward(a, t.o, lse.data(), t.d_o, t.dq, t.dk, t.dv, t.cum_gate ? t.d_cum_gate : nullptr);
}

}  // namespace pathbench
