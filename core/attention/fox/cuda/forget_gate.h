// The FoX forget gate on the GPU (twin of fox.h's ForgetGate): f_t = σ(u_h·x_t + b_h) per head
// and token, cumulative log gates c [B, H, T] for the softmax or PaTH kernels' bias g·(c_i − c_j),
// and the backward to its parameters and x. Shared by the GPU `fox` and `path_fox` encodings.
#pragma once
#include "core/attention/cuda/gpu_encoding.h"
#include "core/ops/cuda/linear.h"

namespace pathbench::cuda {

class ForgetGate {
 public:
  // Finds "<prefix>fox_gate_weight" [H, C] and "<prefix>fox_gate_bias" [H] (declared by the CPU
  // gate) and reads the options gate_bias_init / scale_gate.
  explicit ForgetGate(const EncodingSetup& setup);

  // The multiplier g of the bias: 1, or 1/sqrt(D) with scale_gate.
  float gate_scale() const { return gate_scale_; }
  bool reserve(const AttentionDims& dims, Pass pass);

  // x: [B, T, C] → the cumulative log gates [B, H, T] (valid until the next forward).
  const float* forward(CudaParameters& params, MatrixInput x, const AttentionDims& dims);
  // Where the attention backward writes d(loss)/dc [B, H, T] for backward() to consume.
  float* d_cum() { return d_cum_.data(); }
  const float* d_cum() const { return d_cum_.data(); }
  // Adds the gate parameters' gradients and dx [B, T, C] from d_cum().
  void backward(CudaParameters& params, MatrixInput x, const AttentionDims& dims, float* dx);

 private:
  Context& ctx_;
  CudaParameters::Id weight_, bias_;
  float gate_scale_;
  DeviceBuffer<float> pre_{"gate pre-activations"}, d_pre_{"gate gradients"};  // [B, T, H]
  DeviceBuffer<float> cum_{"cumulative log gates"}, d_cum_{"gate gradients"};  // [B, H, T]
  DeviceBuffer<float> scratch_{"gate column sums"};
};

}  // namespace pathbench::cuda
