// Training one run: build the model from the config and the task, train with AdamW and the
// schedule, log the curve (JSONL) as it goes, evaluate every split periodically and at the end.
#pragma once
#include <limits>
#include <string>

#include "core/model/batch.h"
#include "experiments/run_config.h"
#include "tasks/task.h"

namespace pathbench {

// Receives progress from a running run (the terminal display implements it).
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // After every training step (1-based `step` of `steps`).
  virtual void on_step(int64_t step, int64_t steps, double loss, double tokens_per_s) = 0;
};

struct RunOutcome {
  std::string status = "done";  // done | failed | nan
  std::string failure_reason;   // empty when done
  int64_t failure_step = 0;     // the 1-based step in progress at the failure (the last step for an
                                // evaluation); 0: before training
  json metrics = json::object();  // final {split: metrics}
  int64_t parameters = 0;
  std::string device_name;      // the processor that trained, in words
  int64_t steps_done = 0;
  int64_t resumed_from = 0;     // the checkpoint step training continued from (0: from scratch)
  int64_t stopped_early_at = 0; // the step training.early_stop_split's target was reached (0: not)
  double train_tokens = 0;      // tokens processed by training steps (padding included)
  double train_seconds = 0;
  double eval_seconds = 0;
  double final_loss = std::numeric_limits<double>::quiet_NaN();  // mean loss of the last logged window
};

// Where a run writes as it trains.
struct RunOutputs {
  std::string curve;        // JSONL curve, rewritten from the start (or from a resumed checkpoint's step)
  std::string checkpoint;   // written every training.checkpoint_every steps and at the end (when > 0)
  bool resume = false;      // continue from the checkpoint when one of this run exists
  std::string held_out_starts;  // folder of the sweep's shared held-out draw starts ("": none; evaluate.h)
  std::string spike_checkpoint;  // where training.spike_grad_norm keeps its copy ("": nowhere)
  std::string model;             // where training.save_model writes the final model ("": nowhere)
};

// The batch of training step `step` (0-based: the steps taken before it): examples step·batch_size
// onwards of the train split, for the run's seed.
TokenBatch training_batch(const Task& task, const RunConfig& config, int64_t step);

// Trains `config` on `task`, writing the curve (and checkpoints) to `outputs`. Does not throw: a non-finite loss
// or gradient ends the run with status "nan", an exception (a pathbench::Error, or any other as an
// internal error) with status "failed", both with the step and the reason.
RunOutcome train_run(const RunConfig& config, const Task& task, const RunOutputs& outputs, RunObserver& observer);

}  // namespace pathbench
