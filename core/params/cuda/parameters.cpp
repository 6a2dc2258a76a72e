// Device parameter buffers: allocation, host ↔ device copies, gradient reset.
#include "core/params/cuda/parameters.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/cuda/convert.h"

namespace pathbench::cuda {

CudaParameters::CudaParameters(const ParameterSet<float>& layout, bool keep_bf16, cudaStream_t stream)
    : layout_(&layout), stream_(stream), count_(layout.count()), keep_bf16_(keep_bf16) {
  values_.reserve(count_);
  grads_.reserve(count_);
  if (keep_bf16_) values_bf16_.reserve(count_);
  upload_values(layout);
  zero_grad();
}

WeightRef CudaParameters::weight(Id id) {
  const size_t offset = layout_->entry(id).offset;
  return {values_.data() + offset, keep_bf16_ ? values_bf16_.data() + offset : nullptr, grads_.data() + offset};
}

void CudaParameters::upload_values(const ParameterSet<float>& host) {
  if (host.count() != count_)
    throw Error(fmt::format("uploading parameters: {} values given for a model of {}", host.count(), count_));
  copy_to_device(values_.data(), host.values().data(), count_, stream_);
  if (keep_bf16_) {
    to_bf16(values_.data(), values_bf16_.data(), int64_t(count_), stream_);
    PATHBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
}

void CudaParameters::download(ParameterSet<float>& host) {
  if (host.count() != count_)
    throw Error(fmt::format("downloading parameters into a set of {} values from a model of {}", host.count(), count_));
  copy_to_host(host.values().data(), values_.data(), count_, stream_);
  copy_to_host(host.grads().data(), grads_.data(), count_, stream_);
}

void CudaParameters::zero_grad() {
  PATHBENCH_CUDA_CHECK(cudaMemsetAsync(grads_.data(), 0, count_ * sizeof(float), stream_));
}

}  // namespace pathbench::cuda
