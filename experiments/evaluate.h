// Evaluation of a model on a task's splits: greedy (argmax) predictions at every position go to
// the task's metric accumulator; the mean masked loss is added as "loss".
#pragma once
#include "core/optim/training_backend.h"
#include "experiments/run_config.h"
#include "tasks/task.h"

namespace pathbench {

// {split: metrics} over `example_count` examples of each eval split drawn with `training.eval_seed`,
// in batches of `training.eval_batch_size`; with `draw_ahead`, each batch after the first is drawn
// while the model predicts the one before (the same batches, so the same metrics). With
// `held_out_starts` (a folder), each split's held-out draw starts are read from and saved to the
// files there (held_out_store.h): the same examples, drawn faster by later runs.
json evaluate(TrainingBackend& model, const Task& task, const TrainingConfig& training, int64_t example_count,
              bool draw_ahead = false, const std::string& held_out_starts = "");

// Whether `split`'s primary metric in `metrics` ({split: metrics}) has reached `target`: >= when
// higher is better, <= otherwise; false when the metric is null (nothing scored).
bool metric_reached(const json& metrics, const Task& task, const std::string& split, double target);

// Metrics without their per-group breakdowns (the keys starting with "per_"), for curves and summaries.
json without_breakdowns(const json& split_metrics);

}  // namespace pathbench
