// GPU twin of mlp_layer.h: SwiGLU or GELU MLP with products through cuda::linear_*. Parameters are
// found by name in the host layout (declared by the CPU MlpLayer). SwiGLU's gate and up weights are
// adjacent in the parameter buffer, so they form one [2·F, C] matrix and one product gives both
// pre-activations. In bf16 mode the products write the pre-activations and the hidden gradient in
// bf16 (rounded once in their epilogue, as autocast's products do), the activation kernels read
// them so and write the hidden activations and the pre-activation gradients straight in bf16, the
// operands of the products that use them: no fp32 [N, F]-sized matrix in bf16 mode.
#pragma once
#include <string>

#include "core/cuda/context.h"
#include "core/cuda/pass.h"
#include "core/model/model_config.h"
#include "core/ops/cuda/linear.h"
#include "core/params/cuda/parameters.h"

namespace pathbench::cuda {

class MlpLayer {
 public:
  MlpLayer(Context& ctx, CudaParameters& params, const std::string& prefix, const ModelConfig& config);

  // Sizes the buffers for n rows, the gradients' only for Pass::training; true when any was
  // reallocated.
  bool reserve(int64_t n, Pass pass);
  // x: [N, C], with its bf16 copy where the caller has one (kept by the caller until backward; in
  // bf16 mode the bf16 copy alone, x.f32 null, is enough); y: [N, C] += mlp(x).
  void forward(MatrixInput x, float* y, int64_t n);
  // dy: [N, C], with its bf16 copy where the caller has one; dx: [N, C] (overwritten).
  void backward(MatrixInput dy, float* dx);

 private:
  Context& ctx_;
  CudaParameters& params_;
  bool swiglu_;
  int64_t width_, hidden_, inputs_, n_ = 0;  // inputs_: columns of the first product, 2·F for SwiGLU, else F
  CudaParameters::Id w_in_, w_out_;  // w_in: [F, C] (GELU) or the [2·F, C] block w_gate | w_up; w_out: [C, F]
  MatrixInput x_;                               // [N, C]
  ActivationMatrix pre_{"MLP pre-activations"};     // [N, inputs_]: gate | up per row
  DeviceBuffer<float> d_pre_{"MLP gradients"};      // [N, inputs_], fp32 and tf32 modes
  DeviceBuffer<bf16> d_pre16_{"MLP gradients"};     // [N, inputs_], bf16 mode
  DeviceBuffer<float> h_{"MLP activations"};    // [N, F], fp32 and tf32 modes
  DeviceBuffer<bf16> h16_{"MLP activations"};   // [N, F], bf16 mode
  ActivationMatrix dh_{"MLP gradients"};        // [N, F]
};

}  // namespace pathbench::cuda
