// evaluate: batched greedy predictions and masked loss per eval split.
#include "experiments/evaluate.h"

#include <algorithm>

#include "experiments/batch_prefetch.h"
#include "experiments/held_out_store.h"
#include "tasks/collate.h"

namespace pathbench {

namespace {

// One evaluation batch: its examples (for the metrics) and their collated tokens.
struct EvalBatch {
  std::vector<Example> examples;
  TokenBatch batch;
};

json evaluate_split(TrainingBackend& model, const Task& task, const std::string& split, const TrainingConfig& t,
                    int64_t example_count, bool draw_ahead) {
  std::unique_ptr<MetricAccumulator> metrics = task.metrics(split);
  double loss_sum = 0, weight_sum = 0;
  const int64_t size = t.eval_batch_size, batches = (example_count + size - 1) / size;
  Prefetcher<EvalBatch> next(
      [&](int64_t b) {
        const int64_t first = b * size, count = std::min(size, example_count - first);
        EvalBatch e{draw_examples(task, split, uint64_t(t.eval_seed), first, count), {}};
        e.batch = collate(e.examples);
        model.prepare_ahead(e.batch, false);
        return e;
      },
      batches, draw_ahead);
  for (int64_t b = 0; b < batches; ++b) {
    const EvalBatch drawn = next.take(b);
    const std::vector<Example>& examples = drawn.examples;
    const TokenBatch& batch = drawn.batch;
    const int64_t count = int64_t(examples.size());
    const Prediction prediction = model.predict(batch);
    double weight = 0;
    for (float w : batch.weights) weight += w;
    loss_sum += prediction.loss * weight;
    weight_sum += weight;
    for (int64_t i = 0; i < count; ++i) {
      const Example& e = examples[i];
      const auto row = prediction.argmax.begin() + i * batch.length;  // [T] of example i
      metrics->add(e, std::vector<int32_t>(row, row + int64_t(e.tokens.size())));
    }
  }
  json out = metrics->result();
  out["loss"] = weight_sum > 0 ? json(loss_sum / weight_sum) : json(nullptr);
  return out;
}

}  // namespace

json evaluate(TrainingBackend& model, const Task& task, const TrainingConfig& training, int64_t example_count,
              bool draw_ahead, const std::string& held_out_starts) {
  json out = json::object();
  const uint64_t seed = uint64_t(training.eval_seed), count = uint64_t(example_count);
  for (const std::string& split : task.eval_splits()) {
    if (!held_out_starts.empty()) load_held_out_starts(held_out_starts, task, split, seed, count);
    out[split] = evaluate_split(model, task, split, training, example_count, draw_ahead);
    if (!held_out_starts.empty()) save_held_out_starts(held_out_starts, task, split, seed, count);
  }
  return out;
}

bool metric_reached(const json& metrics, const Task& task, const std::string& split, double target) {
  const json& value = metrics.at(split).at(task.primary_metric());
  if (!value.is_number()) return false;
  return task.higher_is_better() ? value.get<double>() >= target : value.get<double>() <= target;
}

json without_breakdowns(const json& split_metrics) {
  json out = json::object();
  for (const auto& [key, value] : split_metrics.items())
    if (key.rfind("per_", 0) != 0) out[key] = value;
  return out;
}

}  // namespace pathbench
