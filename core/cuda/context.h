// What the GPU ops of one model share: the stream all its work is queued on, a cuBLAS handle bound
// to that stream (with its own workspace, so matrix products can be captured in a CUDA graph), the
// compute precision, and two bf16 staging buffers for matrix-product operands in bf16 mode.
#pragma once
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "core/cuda/buffer.h"
#include "core/precision.h"

namespace pathbench::cuda {

using bf16 = __nv_bfloat16;

class Context {
 public:
  explicit Context(Precision precision);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  cudaStream_t stream() const { return stream_; }
  cublasHandle_t blas() const { return blas_; }
  Precision precision() const { return precision_; }

  // Ensures both staging buffers hold n elements (call outside graph capture); true when reallocated.
  bool reserve_staging(size_t n);
  bf16* staging(int slot) { return slot == 0 ? staging_a_.data() : staging_b_.data(); }
  size_t staging_size() const { return staging_a_.size(); }

  // Waits for the queued work; asynchronous faults surface here as pathbench::Error.
  void synchronize() const;

 private:
  Precision precision_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  DeviceBuffer<char> blas_workspace_{"the cuBLAS workspace"};
  DeviceBuffer<bf16> staging_a_{"bf16 operand staging"}, staging_b_{"bf16 operand staging"};
};

}  // namespace pathbench::cuda
