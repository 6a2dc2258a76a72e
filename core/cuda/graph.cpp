// CUDA graph capture and replay.
#include "core/cuda/graph.h"

#include "core/cuda/check.h"

namespace pathbench::cuda {

void Graph::capture(cudaStream_t stream, const std::function<void()>& enqueue) {
  reset();
  PATHBENCH_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  cudaGraph_t graph = nullptr;
  try {
    enqueue();
  } catch (...) {
    cudaStreamEndCapture(stream, &graph);  // leave the stream usable; the first error is the one reported
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    throw;
  }
  PATHBENCH_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  PATHBENCH_CUDA_CHECK(status);
  exec_ = exec;
}

void Graph::launch(cudaStream_t stream) { PATHBENCH_CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }

void Graph::reset() {
  if (exec_) cudaGraphExecDestroy(exec_);
  exec_ = nullptr;
}

}  // namespace pathbench::cuda
