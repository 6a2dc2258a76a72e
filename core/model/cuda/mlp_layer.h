// GPU twin of mlp_layer.h: SwiGLU or GELU MLP with products through cuda::linear_*. Parameters are
// found by name in the host layout (declared by the CPU MlpLayer). In bf16 mode the activation
// kernel writes the hidden activations straight in bf16, the operand of both products that use them.
#pragma once
#include <string>

#include "core/cuda/context.h"
#include "core/model/model_config.h"
#include "core/ops/cuda/linear.h"
#include "core/params/cuda/parameters.h"

namespace pathbench::cuda {

class MlpLayer {
 public:
  MlpLayer(Context& ctx, CudaParameters& params, const std::string& prefix, const ModelConfig& config);

  // Sizes the buffers for n rows; true when any was reallocated.
  bool reserve(int64_t n);
  // x: [N, C], with its bf16 copy where the caller has one (both kept by the caller until
  // backward); y: [N, C] += mlp(x).
  void forward(MatrixInput x, float* y, int64_t n);
  // dy: [N, C]; dx: [N, C] (overwritten).
  void backward(const float* dy, float* dx);

 private:
  Context& ctx_;
  CudaParameters& params_;
  bool swiglu_;
  int64_t width_, hidden_, n_ = 0;
  CudaParameters::Id w_in_, w_up_ = 0, w_out_;  // w_in is the gate for swiglu; [F, C], [F, C], [C, F]
  MatrixInput x_;                               // [N, C]
  DeviceBuffer<float> a_{"MLP pre-activations"}, b_{"MLP pre-activations"};  // [N, F]
  DeviceBuffer<float> h_{"MLP activations"};    // [N, F], fp32 and tf32 modes
  DeviceBuffer<bf16> h16_{"MLP activations"};   // [N, F], bf16 mode
  DeviceBuffer<float> da_{"MLP gradients"}, db_{"MLP gradients"}, dh_{"MLP gradients"};              // [N, F]
};

}  // namespace pathbench::cuda
