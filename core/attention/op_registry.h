// The attention ops beneath the position encodings, one registry entry each: the tensors an op
// takes beside q, k and v (PaTH's w and β, FoX's log forget gates), the settings that apply to it,
// and its forward and backward on the CPU in float and double. `pathbench op` and its gradient
// tests loop over this list, so an op registered here (a test can register its own) is evaluated,
// validated and checked like the built-in ones. Each op's entry lives beside its kernels
// (rope/rope.cpp, path/path_op.cpp, …).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace pathbench {

// The settings of one call that are not tensors.
struct OpSettings {
  double scale = 0;                   // logit scale s; 0: 1/sqrt(D)
  double gate_scale = 1;              // g, the multiplier of the gate bias g·(c_i − c_j)
  double rope_base = 10000;           // RoPE's rotation base
  bool remainder_to_current = false;  // stick-breaking: unassigned weight to the current token
};

// One call's host tensors: inputs and outputs [BH, T, D], except beta, cum_gate and d_cum_gate [BH, T].
template <typename T>
struct OpTensors {
  int64_t batch_heads = 0, length = 0, head_dim = 0;  // BH, T, D
  T scale = 0;                                         // resolved s
  const T *q = nullptr, *k = nullptr, *v = nullptr, *d_o = nullptr;
  const T* w = nullptr;         // unit rows (ops with Householder inputs)
  const T* beta = nullptr;      // in [0, 2]
  const T* cum_gate = nullptr;  // cumulative log forget gates c (gated ops)
  T *o = nullptr, *dq = nullptr, *dk = nullptr, *dv = nullptr;  // overwritten
  T *dw = nullptr, *dbeta = nullptr, *d_cum_gate = nullptr;     // overwritten where the op takes them
};

template <typename T>
using OpFunction = std::function<void(const OpSettings&, const OpTensors<T>&)>;

struct AttentionOpInfo {
  std::string name;
  std::string description;
  bool householder = false;           // takes w and beta
  bool gated = false;                 // takes log forget gates
  std::vector<std::string> settings;  // of gate_scale, rope_base, remainder_to_current: those it uses
  // "" when the head dimension is supported, else the reason
  std::function<std::string(int64_t head_dim)> head_dim_problem;
  OpFunction<float> cpu_float;        // forward and backward: o, dq, dk, dv (+ dw, dbeta, d_cum_gate)
  OpFunction<double> cpu_double;
};

// Builds an entry from a class with `template <typename T> static void run(const OpSettings&,
// const OpTensors<T>&)`; every head dimension is supported unless `head_dim_problem` says otherwise.
template <class Op>
AttentionOpInfo make_attention_op(std::string name, std::string description, bool householder, bool gated,
                                  std::vector<std::string> settings,
                                  std::function<std::string(int64_t)> head_dim_problem = {}) {
  if (!head_dim_problem) head_dim_problem = [](int64_t) { return std::string(); };
  return AttentionOpInfo{std::move(name),     std::move(description),      householder,
                         gated,               std::move(settings),         std::move(head_dim_problem),
                         &Op::template run<float>, &Op::template run<double>};
}

const std::vector<AttentionOpInfo>& attention_ops();
std::vector<std::string> attention_op_names();
// Throws pathbench::Error naming the unknown op and listing the known ones.
const AttentionOpInfo& find_attention_op(const std::string& name);
// Registers an op (a test's own, say) for this object's lifetime; throws pathbench::Error when the
// name is taken.
class AttentionOpRegistration {
 public:
  explicit AttentionOpRegistration(AttentionOpInfo op);
  ~AttentionOpRegistration();
  AttentionOpRegistration(const AttentionOpRegistration&) = delete;
  AttentionOpRegistration& operator=(const AttentionOpRegistration&) = delete;

 private:
  std::string name_;
};

}  // namespace pathbench
