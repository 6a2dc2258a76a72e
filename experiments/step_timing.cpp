// Training-step and evaluation-batch timing of the standard model on a random batch.
#include "experiments/step_timing.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "core/rng.h"
#include "experiments/median.h"

namespace pathbench {

TokenBatch random_batch(int64_t batch, int64_t length, int64_t vocab, uint64_t seed) {
  TokenBatch b;
  b.batch = batch;
  b.length = length;
  CounterRng rng(seed, "bench-batch");
  std::vector<int32_t> seq(batch * (length + 1));
  for (auto& t : seq) t = int32_t(rng.below(vocab));
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t t = 0; t < length; ++t) {
      b.tokens.push_back(seq[i * (length + 1) + t]);
      b.targets.push_back(seq[i * (length + 1) + t + 1]);
    }
  b.weights.assign(batch * length, 1.0f);
  return b;
}

namespace {

// The standard model of `shape` with position encoding `encoding` on the device of `options`.
std::unique_ptr<TrainingBackend> bench_backend(const StepBenchShape& shape, const std::string& encoding,
                                               const BackendOptions& options) {
  ModelConfig mc;
  mc.vocab_size = shape.vocab;
  mc.n_layers = shape.layers;
  mc.d_model = shape.width;
  mc.n_heads = shape.heads;
  mc.mlp = shape.mlp;
  mc.encoding = encoding;
  mc = ModelConfig::from_json(mc.to_json(), "bench model");
  TrainingSetup setup;
  setup.schedule = LrSchedule{1e-3, 0, 1000, 0.1};
  setup.init_seed = 1;
  return make_training_backend(mc, setup, options);
}

// What one timed call reports: its loss, the device's time for it and the host's time preparing
// its batch (< 0: not measured).
struct CallResult {
  double loss = 0, device_ms = -1, prepare_ms = -1;
};

// The median, fastest and slowest of `timed` calls of `call` (which returns a CallResult) after
// `warmup` untimed ones; final_loss is the last call's, device_median_ms and prepare_median_ms the
// medians of the calls' device and preparation times where every timed call measured them.
template <class Call>
StepTiming time_calls(int warmup, int timed, const Call& call) {
  std::vector<double> ms, device_ms, prepare_ms;
  CallResult result;
  for (int s = 0; s < warmup + timed; ++s) {
    auto t0 = std::chrono::steady_clock::now();
    result = call();
    auto t1 = std::chrono::steady_clock::now();
    if (s < warmup) continue;
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (result.device_ms >= 0) device_ms.push_back(result.device_ms);
    if (result.prepare_ms >= 0) prepare_ms.push_back(result.prepare_ms);
  }
  StepTiming t;
  t.median_ms = median(ms);
  t.min_ms = *std::min_element(ms.begin(), ms.end());
  t.max_ms = *std::max_element(ms.begin(), ms.end());
  if (device_ms.size() == ms.size()) t.device_median_ms = median(device_ms);
  if (prepare_ms.size() == ms.size()) t.prepare_median_ms = median(prepare_ms);
  t.final_loss = result.loss;
  return t;
}

}  // namespace

StepTiming time_training_steps(const StepBenchShape& shape, const std::string& encoding, int warmup, int steps,
                               const BackendOptions& backend_options) {
  auto backend = bench_backend(shape, encoding, backend_options);
  TokenBatch batch = random_batch(shape.batch, shape.length, shape.vocab, 7);
  backend->prepare_ahead(batch, true);  // as the training loop's worker does for each batch
  StepTiming t = time_calls(warmup, steps, [&] {
    const TrainStep s = backend->step(batch);
    return CallResult{s.loss, s.device_ms, s.prepare_ms};
  });
  t.parameters = int64_t(backend->download_parameters().count());
  return t;
}

StepTiming time_evaluation_batches(const StepBenchShape& shape, const std::string& encoding, int64_t eval_batch,
                                   int warmup, int batches, const BackendOptions& backend_options) {
  auto backend = bench_backend(shape, encoding, backend_options);
  TokenBatch batch = random_batch(eval_batch, shape.length, shape.vocab, 11);
  backend->prepare_ahead(batch, false);  // as evaluation's worker does for each batch
  return time_calls(warmup, batches, [&] { return CallResult{backend->predict(batch).loss}; });
}

}  // namespace pathbench
