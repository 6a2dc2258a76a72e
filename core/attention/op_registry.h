// The attention ops beneath the position encodings, one registry entry each: the tensors an op
// takes beside q, k and v (PaTH's w and β, FoX's log forget gates), the settings that apply to it,
// its forward and backward on the CPU in float and double and, in CUDA builds, on the GPU
// (cuda/gpu_op.h). `pathbench op` and its gradient tests, `pathbench bench-attention` and the CUDA
// op conformance test loop over this list, so an op registered here (a test can register its own)
// is evaluated, validated, timed and checked like the built-in ones. Each op's entry lives beside
// its kernels (rope/rope_op.cpp and rope/cuda/rope_gpu_op.cpp, …).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

struct __nv_bfloat16;  // cuda_bf16.h's bf16 type; complete only where the CUDA side is built

namespace pathbench {

namespace cuda {
template <typename S>
struct GpuOp;
}  // namespace cuda

// The settings of one call that are not tensors.
struct OpSettings {
  double scale = 0;                   // logit scale s; 0: 1/sqrt(D)
  double gate_scale = 1;              // g, the multiplier of the gate bias g·(c_i − c_j)
  double rope_base = 10000;           // RoPE's rotation base
  bool remainder_to_current = false;  // stick-breaking: unassigned weight to the current token
  int64_t path_span_chunks = 0;       // PaTH on the GPU: chunks per span (0: its own choice)
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
  // The GPU implementation with fp32 or bf16 storage, attached in CUDA builds (cuda/gpu_op_registry.cpp);
  // null where the op has none.
  std::shared_ptr<const cuda::GpuOp<float>> gpu_float;
  std::shared_ptr<const cuda::GpuOp<__nv_bfloat16>> gpu_bf16;

  bool uses_setting(const std::string& setting) const {
    for (const auto& s : settings)
      if (s == setting) return true;
    return false;
  }
};

// Builds an entry from a class with `template <typename T> static void run(const OpSettings&,
// const OpTensors<T>&)`; every head dimension is supported unless `head_dim_problem` says otherwise.
template <class Op>
AttentionOpInfo make_attention_op(std::string name, std::string description, bool householder, bool gated,
                                  std::vector<std::string> settings,
                                  std::function<std::string(int64_t)> head_dim_problem = {}) {
  AttentionOpInfo op;
  op.name = std::move(name);
  op.description = std::move(description);
  op.householder = householder;
  op.gated = gated;
  op.settings = std::move(settings);
  op.head_dim_problem = head_dim_problem ? std::move(head_dim_problem) : [](int64_t) { return std::string(); };
  op.cpu_float = &Op::template run<float>;
  op.cpu_double = &Op::template run<double>;
  return op;
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
