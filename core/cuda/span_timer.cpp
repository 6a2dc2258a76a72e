// DeviceSpanTimer (span_timer.h): a pair of CUDA timing events.
#include "core/cuda/span_timer.h"

#include "core/cuda/check.h"

namespace pathbench::cuda {

DeviceSpanTimer::DeviceSpanTimer() {
  PATHBENCH_CUDA_CHECK(cudaEventCreate(&begin_));
  PATHBENCH_CUDA_CHECK(cudaEventCreate(&end_));
}

DeviceSpanTimer::~DeviceSpanTimer() {
  // At process exit the runtime may already be gone; nothing is left to report then.
  cudaEventDestroy(end_);
  cudaEventDestroy(begin_);
}

void DeviceSpanTimer::begin(cudaStream_t stream) { PATHBENCH_CUDA_CHECK(cudaEventRecord(begin_, stream)); }

void DeviceSpanTimer::end(cudaStream_t stream) { PATHBENCH_CUDA_CHECK(cudaEventRecord(end_, stream)); }

double DeviceSpanTimer::elapsed_ms() const {
  float ms = 0;
  PATHBENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, begin_, end_));
  return ms;
}

}  // namespace pathbench::cuda
