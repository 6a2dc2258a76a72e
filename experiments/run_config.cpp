// RunConfig: option specs of every block, strict parsing, canonical form, id and hash.
#include "experiments/run_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/attention/gpu_head_dims.h"
#include "core/attention/registry.h"
#include "core/device.h"
#include "core/error.h"
#include "core/precision.h"
#include "core/rng.h"
#include "experiments/json_path.h"
#include "experiments/run_memory.h"

namespace pathbench {

namespace {

const std::vector<OptionSpec>& top_level_specs() {
  static const std::vector<OptionSpec> specs = {
      {"name", OptionType::String, "", "label that prefixes run ids (not part of the run hash)"},
      {"model", OptionType::Object, json::object(), "the model (see `model`)"},
      {"task", OptionType::Object, nullptr, "the task: {\"name\": ..., options} (see the tasks below)"},
      {"optimizer", OptionType::Object, json::object(), "AdamW and gradient clipping (see `optimizer`)"},
      {"schedule", OptionType::Object, json::object(), "learning-rate schedule (see `schedule`)"},
      {"training", OptionType::Object, json::object(), "steps, batches, evaluation, logging (see `training`)"},
      {"seed", OptionType::Int, 0, "seed of the initialization and the training data", 0.0, 9007199254740992.0},
      {"device", OptionType::String, "cpu",
       "where the run computes (not part of the run hash); cuda needs a head dimension d_model/n_heads of " +
           gpu_head_dims_text(),
       {}, {}, {"cpu", "cuda"}},
      {"precision", OptionType::String, "fp32",
       "precision of matrix products and attention on cuda (weights, optimizer and reductions stay fp32); the "
       "cpu computes fp32 only",
       {}, {}, precision_names()},
      {"threads", OptionType::Int, 0, "CPU threads; 0: OpenMP's default (not part of the run hash)", 0.0, 4096.0},
  };
  return specs;
}

const std::vector<OptionSpec>& optimizer_specs() {
  static const std::vector<OptionSpec> specs = {
      {"lr", OptionType::Float, 1e-3, "peak learning rate", 0.0, {}, {}, true},
      {"beta1", OptionType::Float, 0.9, "AdamW β1", 0.0, 1.0, {}, false, true},
      {"beta2", OptionType::Float, 0.95, "AdamW β2", 0.0, 1.0, {}, false, true},
      {"eps", OptionType::Float, 1e-8, "AdamW ε", 0.0, {}, {}, true},
      {"weight_decay", OptionType::Float, 0.1, "decoupled weight decay (matrices and embeddings only)", 0.0},
      {"clip_norm", OptionType::Float, 1.0, "global gradient-norm clip; 0: none", 0.0},
  };
  return specs;
}

const std::vector<OptionSpec>& schedule_specs() {
  static const std::vector<OptionSpec> specs = {
      {"warmup_steps", OptionType::Int, 0, "linear warm-up steps from 0 to the peak learning rate", 0.0},
      {"min_lr_ratio", OptionType::Float, 0.1, "cosine decay ends at this fraction of the peak (1: constant)", 0.0,
       1.0},
  };
  return specs;
}

const std::vector<OptionSpec>& training_specs() {
  static const std::vector<OptionSpec> specs = {
      {"steps", OptionType::Int, 1000, "training steps", 1.0},
      {"batch_size", OptionType::Int, 32, "sequences per training step", 1.0},
      {"eval_every", OptionType::Int, 0, "evaluate every this many steps; 0: only at the end", 0.0},
      {"eval_examples", OptionType::Int, 512, "examples per evaluation split", 1.0},
      {"eval_batch_size", OptionType::Int, 64, "sequences per evaluation batch", 1.0},
      {"eval_seed", OptionType::Int, 0, "seed of the evaluation examples (the same for every run seed)", 0.0,
       9007199254740992.0},
      {"final_eval_examples", OptionType::Int, 0,
       "examples per evaluation split of the last evaluation (e.g. many more, for error rates near 0); 0: "
       "eval_examples",
       0.0},
      {"early_stop_split", OptionType::String, "",
       "stop training at the first periodic evaluation where this split's primary metric reaches early_stop_at "
       "(needs eval_every > 0); \"\": never"},
      {"early_stop_at", OptionType::Float, 0.99,
       "the primary metric's value that stops training (reached at >= when higher is better, else <=)"},
      {"log_every", OptionType::Int, 10, "write a curve line every this many steps (not part of the run hash)", 1.0},
      {"checkpoint_every", OptionType::Int, 0,
       "save a resumable checkpoint every this many steps; 0: never (not part of the run hash)", 0.0},
      {"save_model", OptionType::Bool, false,
       "when the run ends (at its last step or an early stop), write its model (weights, task and run config) as "
       "<run>.model.safetensors, for `pathbench generate`; set it before training: finished runs are skipped (not "
       "part of the run hash)"},
      {"spike_grad_norm", OptionType::Float, 0.0,
       "the first time a step's gradient norm (before clipping) exceeds this, or is non-finite, once a checkpoint "
       "exists, keep a copy of that checkpoint as <run>.spike.safetensors, to replay the steps from it on another "
       "device or precision (`pathbench replay`); 0: never (needs checkpoint_every > 0; not part of the run hash)",
       0.0},
  };
  return specs;
}

// early_stop_split names one of the task's eval splits, and periodic evaluations exist to stop at.
// The memory estimate of a CPU run, from the longest of a few sequences of each split.
RunMemoryEstimate cpu_run_memory(const RunConfig& c, const Task& task) {
  auto longest = [&](const std::string& split) {
    size_t n = 0;
    for (uint64_t i = 0; i < 4; ++i) n = std::max(n, task.example(split, c.seed, i).tokens.size());
    return double(n);
  };
  double eval_length = 0;
  for (const std::string& split : task.eval_splits()) eval_length = std::max(eval_length, longest(split));
  const double batch_tokens = std::max(double(c.training.batch_size) * longest("train"),
                                       double(c.training.eval_batch_size) * eval_length);
  return estimate_cpu_run_memory(c.model_for(task), batch_tokens);
}

void check_early_stop(const TrainingConfig& t, const Task& task, const std::string& where) {
  if (t.early_stop_split.empty()) return;
  const std::vector<std::string> splits = task.eval_splits();
  if (std::find(splits.begin(), splits.end(), t.early_stop_split) == splits.end())
    throw Error(fmt::format("{}: key 'early_stop_split' has value \"{}\" (the task's eval splits are {})", where,
                            t.early_stop_split, fmt::join(splits, ", ")));
  if (t.eval_every == 0)
    throw Error(fmt::format("{}: key 'early_stop_split' is set but 'eval_every' is 0 (early stopping is decided at "
                            "periodic evaluations)",
                            where));
}

std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-') ? c : '_';
  return out;
}

}  // namespace

const std::vector<ConfigBlock>& run_config_blocks() {
  static const std::vector<ConfigBlock> blocks = {
      {"", "The top level of a run config.", &top_level_specs()},
      {"model", "The transformer.", &ModelConfig::specs()},
      {"optimizer", "AdamW with decoupled weight decay and global gradient-norm clipping.", &optimizer_specs()},
      {"schedule", "Linear warm-up, then cosine decay to `min_lr_ratio`·`lr` at the last step.", &schedule_specs()},
      {"training", "Steps, batches, evaluation, logging and checkpoints.", &training_specs()},
  };
  return blocks;
}

const std::vector<std::string>& non_semantic_keys() {
  static const std::vector<std::string> keys = {"name", "device", "threads", "training.log_every",
                                                "training.checkpoint_every", "training.spike_grad_norm",
                                                "training.save_model"};
  return keys;
}

LrSchedule RunConfig::lr_schedule() const {
  return LrSchedule{optimizer.lr, warmup_steps, training.steps, min_lr_ratio};
}

TrainingSetup RunConfig::training_setup() const {
  return TrainingSetup{optimizer.adamw, lr_schedule(), optimizer.clip_norm, uint64_t(seed)};
}

ModelConfig RunConfig::model_for(const Task& task) const {
  ModelConfig m = model;
  if (m.vocab_size == 0) m.vocab_size = task.vocabulary().size();
  return m;
}

BackendOptions RunConfig::backend_options() const {
  BackendOptions o;
  o.device = device;
  parse_precision(precision, o.precision);
  return o;
}

json RunConfig::semantic_json() const {
  json out = doc;
  for (const auto& key : non_semantic_keys()) erase_dotted(out, key);
  return out;
}

std::string RunConfig::hash() const {
  return fmt::format("{:016x}", mix64(hash_string(semantic_json().dump()))).substr(0, 8);
}

std::string RunConfig::id() const {
  std::string id = fmt::format("{}-{}-L{}-d{}-s{}", task["name"].get<std::string>(), model.encoding, model.n_layers,
                               model.d_model, seed);
  return sanitize(name.empty() ? id : name + "-" + id);
}

RunConfig RunConfig::from_json(const json& j, const std::string& where, const TaskProvider& tasks) {
  const json top = resolve_options(top_level_specs(), j, where);
  RunConfig c;
  c.name = top["name"];
  c.seed = top["seed"];
  c.device = top["device"];
  c.precision = top["precision"];
  if (c.device == "cpu" && c.precision != "fp32")
    throw Error(fmt::format("{}: key 'precision' has value \"{}\" but device 'cpu' computes fp32 only (set "
                            "precision to fp32, or device to cuda)",
                            where, c.precision));
  c.threads = top["threads"];
  c.model = ModelConfig::from_json(top["model"], where + ": model");
  if (c.device == "cuda" && !gpu_head_dim_supported(c.model.head_dim()))
    throw Error(fmt::format("{}: model: keys 'd_model' {} / 'n_heads' {} give head dimension {}, but device 'cuda' "
                            "supports head dimensions {} only",
                            where, c.model.d_model, c.model.n_heads, c.model.head_dim(), gpu_head_dims_text()));
  // A build without the CUDA backend knows no GPU classes (it refuses device 'cuda' before any run).
  if (c.device == "cuda" && cuda_backend_built() && !find_encoding(c.model.encoding).make_cuda_float)
    throw Error(fmt::format("{}: model: key 'encoding' has value \"{}\", which has no CUDA implementation (set "
                            "device to cpu)",
                            where, c.model.encoding));
  c.task = tasks.canonical(top["task"], where + ": task");

  const json opt = resolve_options(optimizer_specs(), top["optimizer"], where + ": optimizer");
  c.optimizer.lr = opt["lr"];
  c.optimizer.adamw = AdamWConfig{opt["beta1"], opt["beta2"], opt["eps"], opt["weight_decay"]};
  c.optimizer.clip_norm = opt["clip_norm"];

  const json sched = resolve_options(schedule_specs(), top["schedule"], where + ": schedule");
  c.warmup_steps = sched["warmup_steps"];
  c.min_lr_ratio = sched["min_lr_ratio"];

  const json tr = resolve_options(training_specs(), top["training"], where + ": training");
  c.training = TrainingConfig{tr["steps"],          tr["batch_size"],       tr["eval_every"],
                              tr["eval_examples"],  tr["eval_batch_size"],  tr["eval_seed"],
                              tr["final_eval_examples"], tr["early_stop_split"], tr["early_stop_at"],
                              tr["log_every"],      tr["checkpoint_every"], tr["spike_grad_norm"],
                              tr["save_model"]};
  if (c.training.spike_grad_norm > 0 && c.training.checkpoint_every == 0)
    throw Error(fmt::format("{}: training: key 'spike_grad_norm' is {} but 'checkpoint_every' is 0 (the spike keeps a "
                            "copy of the latest checkpoint)",
                            where, c.training.spike_grad_norm));

  const std::unique_ptr<Task> task = tasks.make(c.task, where + ": task");
  check_early_stop(c.training, *task, where + ": training");
  const int64_t task_vocab = task->vocabulary().size();
  if (c.model.vocab_size != 0 && c.model.vocab_size < task_vocab)
    throw Error(fmt::format("{}: model: key 'vocab_size' has value {} (the task '{}' needs at least {})", where,
                            c.model.vocab_size, c.task["name"].get<std::string>(), task_vocab));
  if (c.device == "cpu") check_cpu_run_fits(cpu_run_memory(c, *task), physical_memory_bytes(), where);

  c.doc = top;
  c.doc["model"] = c.model.to_json();
  c.doc["task"] = c.task;
  c.doc["optimizer"] = opt;
  c.doc["schedule"] = sched;
  c.doc["training"] = tr;
  return c;
}

}  // namespace pathbench
