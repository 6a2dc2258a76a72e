// The FoX forget gate: f_t = σ(u_h·x_t + b_h) per head and token, its cumulative log
// c_t = Σ_{s≤t} log f_s, and the component that owns the gate's parameters. The free functions are
// the gate's ops (used by `fox` and `path_fox` and by `pathbench op`); attention then adds the bias
// g·(c_i − c_j) to its logits (softmax_attention.h, path.h).
#pragma once
#include <cstdint>
#include <vector>

#include "core/attention/encoding.h"

namespace pathbench {

// pre[B, T, H] = x[B, T, C]·weight[H, C]ᵀ + bias[H] (the gate's pre-activation, kept for backward);
// log_gate[B, H, T] = logsigmoid(pre), in the per-head layout.
template <typename T>
void forget_gate_log_forward(const T* x, const T* weight, const T* bias, T* pre, T* log_gate, int64_t batch,
                             int64_t length, int64_t heads, int64_t width);

// Given d_log_gate [B, H, T]: adds into d_weight [H, C], d_bias [H] and dx [B, T, C].
// d_pre [B, T, H] is scratch.
template <typename T>
void forget_gate_log_backward(const T* x, const T* weight, const T* pre, const T* d_log_gate, T* d_pre,
                              T* d_weight, T* d_bias, T* dx, int64_t batch, int64_t length, int64_t heads,
                              int64_t width);

// Per slice of `length` values: cum[t] = Σ_{s≤t} log_gate[s]. In place allowed.
template <typename T>
void cumulative_sum(const T* log_gate, T* cum, int64_t slices, int64_t length);
// Its backward: d_log_gate[t] = Σ_{s≥t} d_cum[s]. In place allowed.
template <typename T>
void cumulative_sum_backward(const T* d_cum, T* d_log_gate, int64_t slices, int64_t length);

// The options a forget gate adds to an encoding (fox, path_fox).
std::vector<OptionSpec> forget_gate_options();

// The gate's parameters "<prefix>fox_gate_weight" [H, C] and "<prefix>fox_gate_bias" [H], and the
// full op x → cumulative log gates [B, H, T] with its backward.
template <typename T>
class ForgetGate {
 public:
  explicit ForgetGate(const EncodingSetup<T>& setup);

  void init_parameters(ParameterSet<T>& params, uint64_t seed) const;
  // The multiplier g of the bias g·(c_i − c_j): 1, or 1/sqrt(D) with the option scale_gate.
  T gate_scale() const { return gate_scale_; }

  // x: [B, T, C]; returns the cumulative log gates [B, H, T] (valid until the next forward).
  const T* forward(ParameterSet<T>& params, const T* x, const AttentionDims& dims);
  // Given d_cum [B, H, T] (overwritten as scratch): adds the parameter gradients and dx [B, T, C].
  void backward(ParameterSet<T>& params, const T* x, const AttentionDims& dims, T* d_cum, T* dx);

  // One decoding step: x [B, C]; cum [B, H] holds c_{t−1} (0 before the first token) and becomes c_t.
  void decode_step(ParameterSet<T>& params, const T* x, const AttentionDims& dims, T* cum);

 private:
  typename ParameterSet<T>::Id weight_, bias_;
  double init_std_, bias_init_;
  T gate_scale_;
  std::vector<T> pre_;    // [B, T, H] pre-activations
  std::vector<T> d_pre_;  // [B, T, H] backward scratch
  std::vector<T> cum_;    // [B, H, T] cumulative log gates
};

}  // namespace pathbench
