// The MLP block: SwiGLU (w_down · (silu(w_gate·x) ∘ w_up·x)) or GELU (w_out · gelu(w_in·x)).
#pragma once
#include <string>
#include <vector>

#include "core/model/model_config.h"
#include "core/params/parameters.h"

namespace pathbench {

template <typename T>
class MlpLayer {
 public:
  MlpLayer(ParameterSet<T>& params, const std::string& prefix, const ModelConfig& config);

  void init_parameters(ParameterSet<T>& params, uint64_t seed);
  // x: [N, C] (kept by the caller until backward); y: [N, C] (overwritten).
  void forward(ParameterSet<T>& params, const T* x, T* y, int64_t n);
  // dy: [N, C]; dx: [N, C] (accumulated).
  void backward(ParameterSet<T>& params, const T* dy, T* dx);

 private:
  bool swiglu_;
  int64_t width_, hidden_, n_ = 0;
  double init_std_, out_init_std_;
  typename ParameterSet<T>::Id w_in_, w_up_ = 0, w_out_;  // w_in is the gate for swiglu; [F, C], [F, C], [C, F]
  const T* x_ = nullptr;        // [N, C]
  std::vector<T> a_, b_, h_;    // [N, F] pre-activations (a: gate/in, b: up) and activation output
  std::vector<T> da_, db_, dh_; // [N, F]
};

}  // namespace pathbench
