// The device copy of a ParameterSet<float>: the same entries (names, shapes, offsets) over one flat
// fp32 value buffer and one flat fp32 gradient buffer on the GPU, plus a bf16 shadow of the values
// in bf16 mode (the operands of bf16 matrix products, refreshed by every upload and optimizer step).
// The host ParameterSet stays the layout and the checkpoint format.
#pragma once
#include <cuda_bf16.h>

#include "core/cuda/buffer.h"
#include "core/params/parameters.h"

namespace pathbench::cuda {

// A weight as the GPU products see it: fp32 values, their bf16 shadow (null outside bf16 mode),
// and the gradient.
struct WeightRef {
  const float* value = nullptr;
  const __nv_bfloat16* value_bf16 = nullptr;
  float* grad = nullptr;
};

class CudaParameters {
 public:
  using Id = ParameterSet<float>::Id;

  // Values and gradients start at zero; copies and resets are queued on `stream`.
  CudaParameters(const ParameterSet<float>& layout, bool keep_bf16, cudaStream_t stream);

  const ParameterSet<float>& layout() const { return *layout_; }
  float* value(Id id) { return values_.data() + layout_->entry(id).offset; }
  float* grad(Id id) { return grads_.data() + layout_->entry(id).offset; }
  WeightRef weight(Id id);

  float* values() { return values_.data(); }
  float* grads() { return grads_.data(); }
  __nv_bfloat16* values_bf16() { return keep_bf16_ ? values_bf16_.data() : nullptr; }
  size_t count() const { return count_; }

  // Synchronous copies between a host set of the same layout and the device.
  void upload_values(const ParameterSet<float>& host);
  void download(ParameterSet<float>& host);  // values and gradients
  void zero_grad();  // queued

 private:
  const ParameterSet<float>* layout_;
  cudaStream_t stream_;
  size_t count_;
  bool keep_bf16_;
  DeviceBuffer<float> values_{"parameter values"}, grads_{"parameter gradients"};
  DeviceBuffer<__nv_bfloat16> values_bf16_{"bf16 parameter copies"};
};

}  // namespace pathbench::cuda
