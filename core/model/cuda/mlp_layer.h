// GPU twin of mlp_layer.h: SwiGLU or GELU MLP with products through cuda::linear_*. Parameters are
// found by name in the host layout (declared by the CPU MlpLayer).
#pragma once
#include <string>

#include "core/cuda/context.h"
#include "core/params/cuda/parameters.h"
#include "core/model/model_config.h"

namespace pathbench::cuda {

class MlpLayer {
 public:
  MlpLayer(Context& ctx, CudaParameters& params, const std::string& prefix, const ModelConfig& config);

  // Sizes the buffers for n rows; true when any was reallocated.
  bool reserve(int64_t n);
  // x: [N, C] (kept by the caller until backward); y: [N, C] += mlp(x).
  void forward(const float* x, float* y, int64_t n);
  // dy: [N, C]; dx: [N, C] (overwritten).
  void backward(const float* dy, float* dx);

 private:
  Context& ctx_;
  CudaParameters& params_;
  bool swiglu_;
  int64_t width_, hidden_, n_ = 0;
  CudaParameters::Id w_in_, w_up_ = 0, w_out_;  // w_in is the gate for swiglu; [F, C], [F, C], [C, F]
  const float* x_ = nullptr;                    // [N, C]
  DeviceBuffer<float> a_{"MLP pre-activations"}, b_{"MLP pre-activations"}, h_{"MLP activations"};  // [N, F]
  DeviceBuffer<float> da_{"MLP gradients"}, db_{"MLP gradients"}, dh_{"MLP gradients"};              // [N, F]
};

}  // namespace pathbench::cuda
