// A CUDA graph captured from the work a function queues on a stream, replayed with one launch. The
// small models of the flip-flop runs are launch-bound; replaying the captured step removes the
// per-kernel launch cost.
#pragma once
#include <cuda_runtime_api.h>

#include <functional>

namespace pathbench::cuda {

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph() { reset(); }

  // Records what `enqueue` queues on `stream` (nothing runs yet) and instantiates it.
  void capture(cudaStream_t stream, const std::function<void()>& enqueue);
  void launch(cudaStream_t stream);
  bool ready() const { return exec_ != nullptr; }
  void reset();

 private:
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace pathbench::cuda
