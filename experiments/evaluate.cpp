// evaluate: batched greedy predictions and masked loss per eval split.
#include "experiments/evaluate.h"

#include <algorithm>

#include "tasks/collate.h"

namespace pathbench {

namespace {

json evaluate_split(TrainingBackend& model, const Task& task, const std::string& split, const TrainingConfig& t,
                    int64_t example_count) {
  std::unique_ptr<MetricAccumulator> metrics = task.metrics(split);
  double loss_sum = 0, weight_sum = 0;
  for (int64_t first = 0; first < example_count; first += t.eval_batch_size) {
    const int64_t count = std::min(t.eval_batch_size, example_count - first);
    const std::vector<Example> examples = draw_examples(task, split, uint64_t(t.eval_seed), first, count);
    const TokenBatch batch = collate(examples);
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

json evaluate(TrainingBackend& model, const Task& task, const TrainingConfig& training, int64_t example_count) {
  json out = json::object();
  for (const std::string& split : task.eval_splits())
    out[split] = evaluate_split(model, task, split, training, example_count);
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
