// `pathbench replay CHECKPOINT`: a run's next training steps from one of its checkpoints, on a
// device and precision of one's choice, with each step's loss, gradient norm and the tensors with
// the largest gradients (experiments/replay.h). The run's config comes from the checkpoint, or from
// --config: a config file (a sweep narrowed to one run with --set) or the run's result JSON.
#include <fmt/format.h>

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "core/attention/op_registry.h"
#include "core/error.h"
#include "core/io/safetensors.h"
#include "experiments/cli_checks.h"
#include "experiments/commands.h"
#include "experiments/file_output.h"
#include "experiments/replay.h"
#include "experiments/result_file.h"
#include "experiments/run_checkpoint.h"
#include "experiments/run_plan.h"

namespace pathbench {

namespace {

struct ReplayOptions {
  std::string config, checkpoint, device, precision, out, record_prefix;
  int64_t record_layer = 0;
  double record_above = INFINITY;
  std::vector<std::string> sets;
  int64_t steps = 10;
  int64_t repeats = 1;
  int64_t threads = -1;
  size_t listed = 3;
};

// The one run that the config (the checkpoint's, a config file or a result JSON's "config") and the
// overrides describe.
PlannedRun the_run(const ReplayOptions& o) {
  json doc = o.config.empty() ? checkpoint_run_config(o.checkpoint) : load_config_file(o.config);
  const std::string where = o.config.empty() ? o.checkpoint + " (its run config)" : o.config;
  if (is_result_document(doc)) {
    if (!doc.contains("config") || !doc["config"].is_object())
      throw Error(fmt::format("{}: a result file without a 'config' object", o.config));
    doc = doc["config"];
  }
  std::vector<Override> overrides = parse_overrides(o.sets);
  if (!o.device.empty()) overrides.push_back(Override{"device", o.device});
  if (!o.precision.empty()) overrides.push_back(Override{"precision", o.precision});
  if (o.threads >= 0) overrides.push_back(Override{"threads", o.threads});
  std::vector<PlannedRun> runs = plan_runs(doc, overrides, where, registry_task_provider());
  if (runs.size() != 1)
    throw Error(fmt::format("{}: describes {} runs; narrow it to one with --set (e.g. --set seed=0)", where,
                            runs.size()));
  return std::move(runs.front());
}

void print_step(const ReplayedStep& s, size_t listed) {
  std::vector<std::pair<std::string, double>> largest = s.tensor_grad_norms;
  const size_t shown = std::min(listed, largest.size());
  std::partial_sort(largest.begin(), largest.begin() + shown, largest.end(),
                    [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string names;
  for (size_t i = 0; i < shown; ++i) names += fmt::format("{}{} {:.3g}", i ? ", " : "", largest[i].first, largest[i].second);
  fmt::print("{:>8}  {:>10.5g}  {:>11.4g}  {:>9.3g}  {}{}\n", s.step, s.loss, s.grad_norm, s.lr, names,
             s.non_finite.empty() ? "" : fmt::format("  ({} tensors with non-finite gradients)", s.non_finite.size()));
}

// Per step, the spread of the loss and gradient norm over every pass, and the passes that went
// non-finite there.
void print_spread(const Replay& replay) {
  fmt::print("\n{} passes over the same steps from the same state:\n", 1 + replay.repeats.size());
  fmt::print("{:>8}  {:>23}  {:>23}  {}\n", "step", "loss min .. max", "grad norm min .. max", "non-finite passes");
  for (size_t k = 0; k < replay.steps.size(); ++k) {
    double lo_loss = INFINITY, hi_loss = -INFINITY, lo_norm = INFINITY, hi_norm = -INFINITY;
    int bad = 0;
    for (size_t pass = 0; pass <= replay.repeats.size(); ++pass) {
      const ReplayedStep& s = pass == 0 ? replay.steps[k] : replay.repeats[pass - 1][k];
      if (!std::isfinite(s.loss) || !std::isfinite(s.grad_norm)) {
        ++bad;
        continue;
      }
      lo_loss = std::min(lo_loss, s.loss), hi_loss = std::max(hi_loss, s.loss);
      lo_norm = std::min(lo_norm, s.grad_norm), hi_norm = std::max(hi_norm, s.grad_norm);
    }
    fmt::print("{:>8}  {:>10.5g} .. {:<10.5g}  {:>10.4g} .. {:<10.4g}  {}\n", replay.steps[k].step, lo_loss, hi_loss,
               lo_norm, hi_norm, bad);
  }
}

// Writes the recorded call as PREFIX.inputs.safetensors and PREFIX.outputs.safetensors and says how
// to evaluate it again.
void write_recorded_call(const Replay& replay, const ReplayOptions& o) {
  if (!replay.recorded_call) {
    fmt::print("no step of the first pass had a gradient norm above {} or non-finite: no attention call recorded\n",
               o.record_above);
    return;
  }
  const RecordedOpCall& call = *replay.recorded_call;
  const std::string inputs = o.record_prefix + ".inputs.safetensors", outputs = o.record_prefix + ".outputs.safetensors";
  write_file_atomically(inputs, serialize_safetensors(call.inputs));
  write_file_atomically(outputs, serialize_safetensors(call.outputs));
  const AttentionOpInfo& op = find_attention_op(call.op);
  std::string settings;  // the op's settings as `pathbench op` options
  const std::pair<const char*, const char*> options[] = {{"gate_scale", "--gate-scale"}, {"rope_base", "--rope-base"}};
  for (const auto& [setting, option] : options)
    if (op.uses_setting(setting)) settings += fmt::format(" {} {}", option, call.inputs.metadata.at(setting));
  if (op.uses_setting("remainder_to_current") && call.inputs.metadata.at("remainder_to_current") == "true")
    settings += " --remainder-to-current";
  const auto w_precision = call.inputs.metadata.find("w_precision");
  fmt::print("recorded layer {}'s attention call of step {} (op {}): {} and the model's own outputs {}\n"
             "evaluate it again with: pathbench op --op {} --input {} --output OUT.safetensors{} [--device cuda "
             "--precision {}]\n",
             o.record_layer, replay.recorded_step, call.op, inputs, outputs, call.op, inputs, settings,
             w_precision == call.inputs.metadata.end() ? "fp32" : w_precision->second);
}

void replay_command(const ReplayOptions& o) {
  const PlannedRun run = the_run(o);
  if (run.config.threads > 0) omp_set_num_threads(int(run.config.threads));
  std::optional<AttentionCallRecording> recording;
  if (!o.record_prefix.empty()) {
    if (o.record_layer >= run.config.model.n_layers)
      throw Error(fmt::format("replay: --record-layer {}: the model has layers 0–{}", o.record_layer,
                              run.config.model.n_layers - 1));
    recording = AttentionCallRecording{o.record_layer, o.record_above};
  }
  const std::unique_ptr<Task> task = registry_task_provider().make(run.config.task, run.label + ": task");
  const Replay replay = replay_training(run.config, *task, o.checkpoint, o.steps, o.repeats, recording);
  fmt::print("{} from step {} of {}, on {} ({})\n", run.file_stem(), replay.checkpoint_step, o.checkpoint,
             replay.device, run.config.precision);
  fmt::print("{:>8}  {:>10}  {:>11}  {:>9}  largest gradient norms (before clipping)\n", "step", "loss", "grad norm",
             "lr");
  for (const ReplayedStep& s : replay.steps) print_step(s, o.listed);
  if (!replay.repeats.empty()) print_spread(replay);
  if (recording) write_recorded_call(replay, o);
  if (o.out.empty()) return;
  json doc = replay_to_json(replay);
  doc["run"] = run.file_stem();
  doc["checkpoint"] = o.checkpoint;
  doc["precision"] = run.config.precision;
  doc["config"] = run.config.doc;
  write_file_atomically(o.out, doc.dump(2) + "\n");
  fmt::print("wrote {}\n", o.out);
}

}  // namespace

void add_replay_command(CLI::App& app) {
  auto o = std::make_shared<ReplayOptions>();
  CLI::App* cmd = app.add_subcommand(
      "replay", "take a run's next training steps from one of its checkpoints, on any device and precision");
  cmd->footer(
      "Loads the parameters and AdamW state of CHECKPOINT (a run's .ckpt.safetensors, or the .spike.safetensors "
      "that training.spike_grad_norm keeps) and trains --steps steps with the run's batches and learning rates, "
      "printing each step's loss, gradient norm and largest per-tensor gradient norms. The same replay on the "
      "GPU and on the CPU (--device cpu --precision fp32) tells a spike of the model's own from a device's.");
  cmd->add_option("checkpoint", o->checkpoint, "a checkpoint written by a run (on any device)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--config", o->config,
                  "the run's config file (one run, after --set) or its result JSON (default: the run config the "
                  "checkpoint holds)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--set", o->sets, "override a key: key.path=value, as in pathbench run")->allow_extra_args(false);
  cmd->add_option("--steps", o->steps, "training steps to take from the checkpoint")->check(integer_at_least(1));
  cmd->add_option("--repeat", o->repeats,
                  "take the steps this many times from the checkpoint's state and print each step's spread (a "
                  "GPU spike that comes back in some passes only is the device's)")
      ->check(integer_at_least(1));
  cmd->add_option("--device", o->device, "device, same as --set device=...")->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--precision", o->precision, "products' precision, same as --set precision=...")
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}));
  cmd->add_option("--threads", o->threads, "CPU threads, same as --set threads=N")->check(integer_at_least(0));
  cmd->add_option("--largest", o->listed, "tensors listed per step, largest gradient norm first")
      ->check(integer_at_least(0));
  cmd->add_option("--out", o->out, "also write every step's numbers, every tensor's norm, as JSON");
  cmd->add_option("--record-attention", o->record_prefix,
                  "record one attention-op call for `pathbench op` as PREFIX.inputs.safetensors (its inputs) "
                  "and PREFIX.outputs.safetensors (the model's own outputs): the call of --record-layer at the "
                  "first step whose gradient norm is above --record-above or not finite");
  cmd->add_option("--record-layer", o->record_layer, "the layer whose attention call is recorded (default 0)")
      ->check(integer_at_least(0));
  cmd->add_option("--record-above", o->record_above,
                  "record at the first step whose gradient norm exceeds this (default: only a non-finite one)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([o]() { replay_command(*o); });
}

}  // namespace pathbench
