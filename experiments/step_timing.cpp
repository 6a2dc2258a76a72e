// Training-step timing of the standard model on a random batch.
#include "experiments/step_timing.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/rng.h"

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

StepTiming time_training_steps(const StepBenchShape& shape, const std::string& encoding, int warmup, int steps,
                               const BackendOptions& backend_options) {
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
  auto backend = make_training_backend(mc, setup, backend_options);
  TokenBatch batch = random_batch(shape.batch, shape.length, shape.vocab, 7);
  std::vector<double> ms;
  double loss = 0;
  for (int s = 0; s < warmup + steps; ++s) {
    auto t0 = std::chrono::steady_clock::now();
    loss = backend->step(batch).loss;
    auto t1 = std::chrono::steady_clock::now();
    if (s >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front(), ms.back(), int64_t(backend->download_parameters().count()), loss};
}

}  // namespace pathbench
