// A second stream for work that does not feed the main stream's next kernels (zeroing accumulators
// that a later kernel adds into), so that it runs beside them instead of before them. Forked from
// and joined back to the main stream with events, which a CUDA graph captures like any other work.
#pragma once
#include <cuda_runtime_api.h>

namespace pathbench::cuda {

class SideStream {
 public:
  static constexpr int kMarks = 2;  // join points one piece of side work can hand the main stream

  SideStream();
  ~SideStream();
  SideStream(const SideStream&) = delete;
  SideStream& operator=(const SideStream&) = delete;

  cudaStream_t stream() const { return stream_; }
  // What the side stream queues next runs after everything queued on `main` so far.
  void fork(cudaStream_t main);
  // Mark `slot` (< kMarks) stands for the side work queued so far.
  void mark(int slot);
  // What `main` queues next runs after the side work that mark `slot` stands for.
  void wait(cudaStream_t main, int slot);

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t forked_ = nullptr;
  cudaEvent_t marks_[kMarks] = {};
};

// The calling thread's side stream on the current device, created on its first use. Null when it
// does not exist yet and `main` is being captured into a graph (nothing is created during a
// capture): the caller then queues the side work on `main` itself. A training step runs once
// eagerly before it is captured, so its captures find the stream made.
SideStream* side_stream(cudaStream_t main);

}  // namespace pathbench::cuda
