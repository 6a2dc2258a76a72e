// SideStream (side_stream.h): a non-blocking stream and timing-free events, one per thread and device.
#include "core/cuda/side_stream.h"

#include <map>
#include <memory>
#include <stdexcept>

#include "core/cuda/check.h"

namespace pathbench::cuda {

SideStream::SideStream() {
  PATHBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  PATHBENCH_CUDA_CHECK(cudaEventCreateWithFlags(&forked_, cudaEventDisableTiming));
  for (cudaEvent_t& e : marks_) PATHBENCH_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
}

SideStream::~SideStream() {
  // At thread or process exit the runtime may already be gone; nothing is left to report then.
  for (cudaEvent_t e : marks_) cudaEventDestroy(e);
  cudaEventDestroy(forked_);
  cudaStreamDestroy(stream_);
}

void SideStream::fork(cudaStream_t main) {
  PATHBENCH_CUDA_CHECK(cudaEventRecord(forked_, main));
  PATHBENCH_CUDA_CHECK(cudaStreamWaitEvent(stream_, forked_, 0));
}

void SideStream::mark(int slot) {
  if (slot < 0 || slot >= kMarks) throw std::logic_error("SideStream::mark: slot out of range");
  PATHBENCH_CUDA_CHECK(cudaEventRecord(marks_[slot], stream_));
}

void SideStream::wait(cudaStream_t main, int slot) {
  if (slot < 0 || slot >= kMarks) throw std::logic_error("SideStream::wait: slot out of range");
  PATHBENCH_CUDA_CHECK(cudaStreamWaitEvent(main, marks_[slot], 0));
}

SideStream* side_stream(cudaStream_t main) {
  thread_local std::map<int, std::unique_ptr<SideStream>> by_device;
  int device = 0;
  PATHBENCH_CUDA_CHECK(cudaGetDevice(&device));
  auto it = by_device.find(device);
  if (it != by_device.end()) return it->second.get();
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  PATHBENCH_CUDA_CHECK(cudaStreamIsCapturing(main, &capture));
  if (capture != cudaStreamCaptureStatusNone) return nullptr;
  return by_device.emplace(device, std::make_unique<SideStream>()).first->second.get();
}

}  // namespace pathbench::cuda
