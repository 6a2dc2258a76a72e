// SideStream: its fork and marks order work between the two streams, eagerly and inside a captured
// graph; a capture that finds no side stream made gets none. Run with
// `pathbench_tests --require-gpu "[cuda]"`.
#ifdef PATHBENCH_WITH_CUDA
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "core/cuda/buffer.h"
#include "core/cuda/check.h"
#include "core/cuda/context.h"
#include "core/cuda/graph.h"
#include "core/cuda/side_stream.h"
#include "core/precision.h"

namespace pathbench {
namespace {

// Host functions queued on a stream: one sets a flag after a pause, the other records what it sees.
struct Flags {
  std::atomic<int> set{0};
  int seen = -1;
};
void CUDART_CB set_after_pause(void* p) {
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  static_cast<Flags*>(p)->set = 1;
}
void CUDART_CB record_flag(void* p) {
  auto* f = static_cast<Flags*>(p);
  f->seen = f->set.load();
}

TEST_CASE("A side stream's work follows the fork, and the main stream's the mark it waits on", "[cuda]") {
  cuda::Context ctx(Precision::fp32);
  cudaStream_t main = ctx.stream();
  cuda::SideStream* side = cuda::side_stream(main);
  REQUIRE(side != nullptr);
  CHECK(cuda::side_stream(main) == side);  // one per thread and device

  Flags before_fork;
  PATHBENCH_CUDA_CHECK(cudaLaunchHostFunc(main, set_after_pause, &before_fork));
  side->fork(main);
  PATHBENCH_CUDA_CHECK(cudaLaunchHostFunc(side->stream(), record_flag, &before_fork));
  PATHBENCH_CUDA_CHECK(cudaStreamSynchronize(side->stream()));
  CHECK(before_fork.seen == 1);

  Flags before_mark;
  side->fork(main);
  PATHBENCH_CUDA_CHECK(cudaLaunchHostFunc(side->stream(), set_after_pause, &before_mark));
  side->mark(1);
  side->wait(main, 1);
  PATHBENCH_CUDA_CHECK(cudaLaunchHostFunc(main, record_flag, &before_mark));
  ctx.synchronize();
  CHECK(before_mark.seen == 1);
}

TEST_CASE("A captured graph keeps a side stream's fork and mark", "[cuda]") {
  cuda::Context ctx(Precision::fp32);
  cudaStream_t main = ctx.stream();
  cuda::SideStream* side = cuda::side_stream(main);
  REQUIRE(side != nullptr);
  const size_t n = 1 << 20;
  cuda::DeviceBuffer<unsigned char> zeroed(n, "zeroed"), copy(n, "copy");
  PATHBENCH_CUDA_CHECK(cudaMemsetAsync(zeroed.data(), 7, n, main));
  PATHBENCH_CUDA_CHECK(cudaMemsetAsync(copy.data(), 9, n, main));
  cuda::Graph graph;
  graph.capture(main, [&] {
    side->fork(main);
    PATHBENCH_CUDA_CHECK(cudaMemsetAsync(zeroed.data(), 0, n, side->stream()));
    side->mark(0);
    side->wait(main, 0);
    PATHBENCH_CUDA_CHECK(cudaMemcpyAsync(copy.data(), zeroed.data(), n, cudaMemcpyDeviceToDevice, main));
  });
  graph.launch(main);
  std::vector<unsigned char> host(n, 1);
  PATHBENCH_CUDA_CHECK(cudaMemcpyAsync(host.data(), copy.data(), n, cudaMemcpyDeviceToHost, main));
  ctx.synchronize();
  CHECK(std::count(host.begin(), host.end(), 0) == long(n));
}

TEST_CASE("A capture that finds no side stream made gets none", "[cuda]") {
  cuda::SideStream* found = reinterpret_cast<cuda::SideStream*>(1);
  std::string error;
  std::thread fresh([&] {  // a new thread has no side stream yet
    try {
      cuda::Context ctx(Precision::fp32);
      PATHBENCH_CUDA_CHECK(cudaStreamBeginCapture(ctx.stream(), cudaStreamCaptureModeThreadLocal));
      found = cuda::side_stream(ctx.stream());
      cudaGraph_t graph = nullptr;
      PATHBENCH_CUDA_CHECK(cudaStreamEndCapture(ctx.stream(), &graph));
      if (graph) cudaGraphDestroy(graph);
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  fresh.join();
  CHECK(error.empty());
  CHECK(found == nullptr);
}

}  // namespace
}  // namespace pathbench
#endif  // PATHBENCH_WITH_CUDA
