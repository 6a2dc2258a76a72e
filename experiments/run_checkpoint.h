// Mid-run checkpoints of a training run on any device: the parameters and AdamW state of its
// training backend (experiments/checkpoint.h) plus the runner's own progress (step, running totals,
// the open logging window, the last metrics), tagged with the run's hash so a checkpoint is only
// ever resumed by its own run; and a finished run's model (training.save_model), for generation.
#pragma once
#include <optional>
#include <string>

#include "core/options.h"
#include "experiments/run_config.h"
#include "core/optim/training_backend.h"

namespace pathbench {

// Running sums of one logging window of the curve.
struct CurveWindow {
  int64_t steps = 0;
  double loss = 0, grad_norm = 0, tokens = 0, seconds = 0;  // sums over the window's steps
  double grad_norm_max = 0;  // the largest step's gradient norm: a one-step spike that the mean hides
};

// Where a run stands after `step` completed steps.
struct RunProgress {
  int64_t step = 0;
  double train_tokens = 0, train_seconds = 0, eval_seconds = 0;
  double last_logged_loss = 0;     // mean loss of the last written window (NaN before the first)
  CurveWindow window;
  json metrics = json::object();  // of the last evaluation
};

// The metadata names the run (its hash), its task config ("task", so `pathbench generate` reads and
// writes the task's symbols) and its whole config ("run_config", so `pathbench replay` needs no other
// file). `model` is the run's model with its vocabulary size resolved.
void save_run_checkpoint(const std::string& path, const RunConfig& run, const ModelConfig& model,
                         TrainingBackend& backend, const RunProgress& progress);

// The run's final model for `pathbench generate`: its parameters with the same metadata as a
// checkpoint (run hash, task, run config), without optimizer state or progress.
void save_run_model(const std::string& path, const RunConfig& run, const ModelConfig& model, TrainingBackend& backend);

// Loads a checkpoint of run `run_hash` into `backend` (built from the run's config) and returns its
// progress; nullopt when no file exists or it belongs to another run. Throws pathbench::Error for
// an unreadable or mismatched file.
std::optional<RunProgress> load_run_checkpoint(const std::string& path, const std::string& run_hash,
                                               TrainingBackend& backend);

// The config of the run that wrote the checkpoint at `path` (its "run_config" metadata). Throws
// pathbench::Error naming the path when the file holds none (a checkpoint of an older pathbench).
json checkpoint_run_config(const std::string& path);

}  // namespace pathbench
