// The device's own time for a span of queued work: two timing events recorded on a stream around
// it, read after the stream has been synchronized. Host work between launches (batch preparation,
// API calls, the wait for completion) is not in it, so a step's wall time minus this span is what
// the host adds.
#pragma once
#include <cuda_runtime_api.h>

namespace pathbench::cuda {

class DeviceSpanTimer {
 public:
  DeviceSpanTimer();
  ~DeviceSpanTimer();
  DeviceSpanTimer(const DeviceSpanTimer&) = delete;
  DeviceSpanTimer& operator=(const DeviceSpanTimer&) = delete;

  // Marks the start and the end of the span on `stream` (outside any graph capture).
  void begin(cudaStream_t stream);
  void end(cudaStream_t stream);
  // Milliseconds from begin to end; call once the stream has passed end.
  double elapsed_ms() const;

 private:
  cudaEvent_t begin_ = nullptr, end_ = nullptr;
};

}  // namespace pathbench::cuda
