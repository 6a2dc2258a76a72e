// The configuration of one training run: strict JSON blocks (model, task, optimizer, schedule,
// training) plus seed, device and threads. Every block is declared as an OptionSpec list, so
// validation is strict and the config reference is generated from the same lists.
#pragma once
#include <string>
#include <vector>

#include "core/model/model_config.h"
#include "core/optim/adamw.h"
#include "core/optim/training_backend.h"
#include "experiments/task_provider.h"

namespace pathbench {

struct OptimizerConfig {
  double lr = 1e-3;
  AdamWConfig adamw;
  double clip_norm = 1.0;  // 0: no clipping
};

struct TrainingConfig {
  int64_t steps = 1000;
  int64_t batch_size = 32;
  int64_t eval_every = 0;  // 0: evaluate only at the end
  int64_t eval_examples = 512;
  int64_t eval_batch_size = 64;
  int64_t eval_seed = 0;
  int64_t final_eval_examples = 0;  // examples per split of the last evaluation; 0: eval_examples
  std::string early_stop_split;     // "": train every step; else stop once this split's primary
  double early_stop_at = 0.99;      // metric reaches early_stop_at at a periodic evaluation
  int64_t log_every = 10;
  int64_t checkpoint_every = 0;  // 0: no checkpoints
  double spike_grad_norm = 0;    // keep the checkpoint before the first step whose gradient norm exceeds it; 0: off
  bool save_model = false;       // write the final model for `pathbench generate`
};

struct RunConfig {
  std::string name;           // optional prefix of run ids
  ModelConfig model;
  json task;                  // canonical task block {"name": ..., every option}
  OptimizerConfig optimizer;
  int64_t warmup_steps = 0;
  double min_lr_ratio = 0.1;
  TrainingConfig training;
  int64_t seed = 0;
  std::string device = "cpu";
  std::string precision = "fp32";  // of matrix products: fp32 | tf32 | bf16 (the CPU computes fp32)
  int64_t threads = 0;        // 0: OpenMP's default

  json doc;                   // every key of the run, resolved (what results record)

  LrSchedule lr_schedule() const;
  BackendOptions backend_options() const;
  // The optimizer, schedule, clipping and initialization seed a backend trains this run with.
  TrainingSetup training_setup() const;
  // The model with its vocabulary size taken from `task` where the config leaves it 0.
  ModelConfig model_for(const Task& task) const;
  // doc without the keys that do not change what is computed (name, device, threads, logging and
  // checkpoint cadence); its hash identifies the run.
  json semantic_json() const;
  // 8 hex digits of a hash of semantic_json()'s canonical dump.
  std::string hash() const;
  // Readable: [name-]task-encoding-L<layers>-d<width>-s<seed>.
  std::string id() const;

  // Strict parsing: errors name `where`, the block and key, and the value. Builds the task once to
  // check the model's vocabulary against it.
  static RunConfig from_json(const json& j, const std::string& where, const TaskProvider& tasks);
};

// The config blocks and their specs, in reference order: {"" (top level), "optimizer", ...}.
struct ConfigBlock {
  std::string name;
  std::string doc;
  const std::vector<OptionSpec>* specs;
};
const std::vector<ConfigBlock>& run_config_blocks();

// The dotted keys left out of the run hash.
const std::vector<std::string>& non_semantic_keys();

}  // namespace pathbench
