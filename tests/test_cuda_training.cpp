// GPU training: CUDA graph replay against eager steps, steps and predictions on batches prepared ahead,
// each step's device and preparation times, parameters and optimizer state moving between the CPU and
// GPU backends, 200 steps tracking the CPU loss curve, and GPU failures surfacing as a one-line
// pathbench::Error. Run with `pathbench_tests --require-gpu "[cuda]"`.
#ifdef PATHBENCH_WITH_CUDA
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <vector>

#include "core/cuda/context.h"
#include "core/error.h"
#include "core/model/batch_preparation.h"
#include "core/ops/cuda/linear.h"
#include "core/optim/trainer.h"
#include "core/optim/training_backend.h"
#include "tests/cuda_test_support.h"
#include "tests/test_support.h"

namespace pathbench {
namespace {

using namespace cuda_testing;

TEST_CASE("CUDA graph replay gives the results of eager steps", "[cuda]") {
  // Every encoding: PaTH's and stick-breaking's workspaces and span buffers are captured too.
  for (const std::string& encoding : cuda_encodings()) {
    INFO(encoding);
    const ModelConfig config = small_training_config(encoding);
    auto graphed = make_training_backend(config, small_training_setup(), {"cuda", Precision::fp32, true});
    auto eager = make_training_backend(config, small_training_setup(), {"cuda", Precision::fp32, false});
    for (int step = 0; step < 5; ++step) {
      const TokenBatch batch = make_batch(4, 64, 8, 200 + step, true);
      const TrainStep a = graphed->step(batch), b = eager->step(batch);
      INFO("step " << step);
      CHECK(a.loss == Approx(b.loss).epsilon(1e-6));
      CHECK(a.grad_norm == Approx(b.grad_norm).epsilon(1e-6));
      CHECK(a.lr == b.lr);
    }
    const auto pa = graphed->download_parameters().values(), pb = eager->download_parameters().values();
    CHECK(relative_error(pa, to_double(pb)) <= 1e-6);
    // A batch of another shape after the graph: re-planned, still the same results.
    const TokenBatch other = make_batch(2, 50, 8, 300, true);
    CHECK(graphed->step(other).loss == Approx(eager->step(other).loss).epsilon(1e-6));
    CHECK(graphed->predict(other).argmax == eager->predict(other).argmax);
  }
}

TEST_CASE("GPU steps and predictions on batches prepared ahead give the results of unprepared ones", "[cuda]") {
  const ModelConfig config = small_training_config("path");
  // fp32: the in-span scan's atomic sums may add in another order from run to run, so results agree
  // to rounding (as in the graph case above), not bit for bit.
  auto ahead = make_training_backend(config, small_training_setup(), {"cuda", Precision::fp32, true});
  auto plain = make_training_backend(config, small_training_setup(), {"cuda", Precision::fp32, true});
  for (int step = 0; step < 4; ++step) {  // eager, captured, then replayed
    INFO("step " << step);
    const TokenBatch batch = make_batch(4, 64, 8, 1300 + step, true);
    TokenBatch prepared = batch;
    ahead->prepare_ahead(prepared, true);
    REQUIRE(prepared.prepared);
    const TrainStep a = ahead->step(prepared), b = plain->step(batch);
    CHECK(a.loss == Approx(b.loss).epsilon(1e-6));
    CHECK(a.grad_norm == Approx(b.grad_norm).epsilon(1e-6));
  }
  const auto pa = ahead->download_parameters().values(), pb = plain->download_parameters().values();
  CHECK(relative_error(pa, to_double(pb)) <= 1e-6);
  TokenBatch eval = make_batch(3, 40, 8, 1400, false);
  const Prediction expected = plain->predict(eval);
  ahead->prepare_ahead(eval, false);
  const Prediction p = ahead->predict(eval);
  CHECK(p.loss == Approx(expected.loss).epsilon(1e-6));
  CHECK(p.argmax == expected.argmax);
  // Prepared for evaluation only (no plan), the batch still trains: the step builds the plan.
  CHECK(ahead->step(eval).loss == Approx(plain->step(make_batch(3, 40, 8, 1400, false)).loss).epsilon(1e-6));
  // A batch prepared against another vocabulary is checked again: its bad token still fails.
  TokenBatch bad = make_batch(2, 16, 8, 1500, true);
  bad.tokens[5] = 8;
  bad.prepared = prepare_batch(bad, 9, true);
  CHECK_THROWS_AS(ahead->step(bad), Error);
}

TEST_CASE("A GPU step reports the device's time for its work and the host's preparation, within its wall time",
          "[cuda]") {
  for (const bool graph : {true, false}) {
    INFO("CUDA graph " << graph);
    auto backend = make_training_backend(small_training_config("path"), small_training_setup(),
                                         {"cuda", Precision::bf16, graph});
    for (int step = 0; step < 4; ++step) {  // eager, captured, then replayed where graph is on
      const TokenBatch batch = make_batch(4, 64, 8, 900, true);
      const auto t0 = std::chrono::steady_clock::now();
      const TrainStep s = backend->step(batch);
      const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      INFO("step " << step << ": device " << s.device_ms << " ms, preparation " << s.prepare_ms << " ms, wall "
                    << wall_ms << " ms");
      CHECK(s.device_ms > 0);
      CHECK(s.prepare_ms > 0);
      CHECK(s.device_ms + s.prepare_ms <= wall_ms);  // the preparation ends before the device starts
    }
  }
}

TEST_CASE("Parameters and optimizer state move between the CPU and GPU backends", "[cuda]") {
  const ModelConfig config = small_training_config("rope");
  auto cpu = make_training_backend(config, small_training_setup(), {"cpu", Precision::fp32, false});
  auto gpu = make_training_backend(config, small_training_setup(), {"cuda", Precision::fp32, true});
  // Same initialization on both devices.
  CHECK(gpu->download_parameters().values() == cpu->download_parameters().values());
  for (int step = 0; step < 3; ++step) cpu->step(make_batch(4, 32, 8, 700 + step, true));
  gpu->upload_parameters(cpu->download_parameters());
  gpu->upload_optimizer_state(cpu->download_optimizer_state());
  CHECK(gpu->steps() == 3);
  for (int step = 3; step < 6; ++step) {  // the third GPU step replays the captured graph
    const TokenBatch batch = make_batch(4, 32, 8, 700 + step, true);
    const TrainStep a = cpu->step(batch), b = gpu->step(batch);
    CHECK(b.loss == Approx(a.loss).epsilon(1e-5));
    CHECK(b.lr == a.lr);
  }
  CHECK(relative_error(gpu->download_parameters().values(), to_double(cpu->download_parameters().values())) <= 1e-5);
  const OptimizerState sc = cpu->download_optimizer_state(), sg = gpu->download_optimizer_state();
  CHECK(sg.steps == sc.steps);
  CHECK(relative_error(sg.first_moment, to_double(sc.first_moment)) <= 1e-4);
  CHECK(relative_error(sg.second_moment, to_double(sc.second_moment)) <= 1e-4);
  OptimizerState bad = sc;
  bad.first_moment.pop_back();
  CHECK_THROWS_AS(gpu->upload_optimizer_state(bad), Error);
}

TEST_CASE("200 GPU training steps track the CPU loss curve", "[cuda]") {
  const std::vector<std::string> encodings = cuda_encodings();
  const std::string encoding =
      std::find(encodings.begin(), encodings.end(), "rope") != encodings.end() ? "rope" : encodings.front();
  const ModelConfig config = small_training_config(encoding);
  const TrainingSetup setup = small_training_setup();
  constexpr int kSteps = 200, kWindow = 20;
  auto cpu = make_training_backend(config, setup, {"cpu", Precision::fp32, false});
  std::vector<double> cpu_curve;
  for (int step = 0; step < kSteps; ++step) cpu_curve.push_back(cpu->step(make_batch(16, 64, 8, 1000 + step, true)).loss);
  auto window_means = [&](const std::vector<double>& curve) {
    std::vector<double> means;
    for (int w = 0; w < kSteps / kWindow; ++w) {
      double sum = 0;
      for (int i = 0; i < kWindow; ++i) sum += curve[w * kWindow + i];
      means.push_back(sum / kWindow);
    }
    return means;
  };
  const std::vector<double> cpu_means = window_means(cpu_curve);
  REQUIRE(cpu_means.back() < 0.85 * cpu_means.front());  // the model learns, so tracking means something
  for (auto [precision, tol] : {std::pair{Precision::fp32, 0.02}, std::pair{Precision::bf16, 0.05}}) {
    auto gpu = make_training_backend(config, setup, {"cuda", precision, true});
    std::vector<double> curve;
    for (int step = 0; step < kSteps; ++step) curve.push_back(gpu->step(make_batch(16, 64, 8, 1000 + step, true)).loss);
    const std::vector<double> means = window_means(curve);
    std::string line;
    double worst = 0;
    for (size_t w = 0; w < means.size(); ++w) {
      line += fmt::format(" {:.3f}/{:.3f}", means[w], cpu_means[w]);
      worst = std::max(worst, std::fabs(means[w] - cpu_means[w]) / cpu_means.front());
    }
    std::printf("training %s %s, window means GPU/CPU:%s (worst gap %.3f of the initial loss)\n", encoding.c_str(),
                precision_name(precision), line.c_str(), worst);
    INFO(precision_name(precision) << " window means GPU/CPU:" << line);
    CHECK(worst <= tol);
  }
}

TEST_CASE("GPU failures end with a one-line pathbench::Error", "[cuda]") {
  // Out of device memory: the allocation names what it was for and how much.
  try {
    DeviceBuffer<float> huge(size_t(1) << 48, "a test tensor");
    FAIL("allocating 1 PiB of device memory did not fail");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.find("a test tensor") != std::string::npos);
    CHECK(what.find('\n') == std::string::npos);
  }
  // A bad token is rejected before any device work, and the backend stays usable.
  const ModelConfig config = small_training_config(cuda_encodings().front());
  auto backend = make_training_backend(config, small_training_setup(), {"cuda", Precision::fp32, true});
  TokenBatch bad = make_batch(2, 16, 8, 400, true);
  bad.tokens[5] = 8;
  CHECK_THROWS_AS(backend->step(bad), Error);
  CHECK(std::isfinite(backend->step(make_batch(2, 16, 8, 401, true)).loss));
  // A product of negative size is rejected before cuBLAS sees it (which would print its own log
  // line), naming the op and the shapes.
  cuda::Context ctx(Precision::fp32);
  DeviceBuffer<float> small(16, "a test tensor");
  const cuda::WeightRef w{small.data(), nullptr, small.data()};
  CHECK_THROWS_WITH(cuda::linear_forward(ctx, {small.data()}, w, small.data(), -1, 4, 4),
                    Catch::Contains("linear_forward: matrix product C[-1, 4]") &&
                        Catch::Contains("sizes must be >= 0"));
}

}  // namespace
}  // namespace pathbench
#endif  // PATHBENCH_WITH_CUDA
