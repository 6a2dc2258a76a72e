// run_sweep: skip finished runs, train the others, record every outcome.
#include "experiments/sweep_runner.h"

#include <fmt/format.h>
#include <omp.h>

#include <chrono>
#include <filesystem>

#include "core/optim/training_backend.h"
#include "core/error.h"
#include "experiments/file_output.h"
#include "experiments/result_file.h"
#include "experiments/run_metadata.h"

namespace pathbench {

namespace {

// "in_dist error_rate 0.069, sparse error_rate 0.4" from a result's metrics.
std::string metrics_summary(const json& metrics, const Task* task) {
  if (!task) return "";
  std::string out;
  for (const auto& split : task->eval_splits()) {
    if (!metrics.contains(split)) continue;
    const json& value = metrics[split].value(task->primary_metric(), json());
    out += fmt::format("{}{} {} {}", out.empty() ? "" : ", ", split, task->primary_metric(),
                       value.is_number() ? fmt::format("{:.4g}", value.get<double>()) : value.dump());
  }
  return out;
}

}  // namespace

std::vector<RunState> shard_states(const std::vector<PlannedRun>& runs, const SweepOptions& options) {
  const auto status = result_status_by_hash(options.out_dir);
  std::vector<RunState> states;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!options.shard.contains(i)) continue;
    const auto it = status.find(runs[i].hash);
    states.push_back(RunState{&runs[i], i, it == status.end() ? "" : it->second});
  }
  return states;
}

SweepSummary run_sweep(const std::vector<PlannedRun>& runs, const SweepOptions& options, SweepProgress& progress) {
  const std::vector<RunState> states = shard_states(runs, options);
  SweepSummary summary;
  summary.planned = int64_t(runs.size());
  summary.in_shard = int64_t(states.size());
  int64_t to_run = 0, total_steps = 0;
  for (const RunState& s : states) {
    if (s.previous == "done") continue;
    check_device_available(s.run->config.device);
    ++to_run;
    total_steps += s.run->config.training.steps;
  }
  summary.skipped = summary.in_shard - to_run;
  const json git = source_git_state();  // before the folder: a bad PATHBENCH_GIT_COMMIT writes nothing
  std::error_code ec;
  std::filesystem::create_directories(options.out_dir, ec);
  if (ec) throw Error(fmt::format("cannot create the results folder '{}': {}", options.out_dir, ec.message()));
  progress.message(fmt::format("{} runs in the sweep, {} in shard {}, {} already done, {} to run; results in {}",
                               summary.planned, summary.in_shard, options.shard.text(), summary.skipped, to_run,
                               options.out_dir));
  progress.begin_sweep(to_run, total_steps);
  const int default_threads = omp_get_max_threads();
  for (const RunState& s : states) {
    if (s.previous == "done") continue;
    const PlannedRun& run = *s.run;
    const RunFiles files = run_files(options.out_dir, run);
    if (!s.previous.empty()) {
      // An earlier attempt failed: start afresh, and let a kill of this attempt resume from its own
      // checkpoints (a run resumes only when it has no result).
      std::error_code ignored;
      std::filesystem::remove(files.result, ignored);
      std::filesystem::remove(files.checkpoint, ignored);
    }
    omp_set_num_threads(run.config.threads > 0 ? int(run.config.threads) : default_threads);
    RunContext context{options.config_file, utc_timestamp(), "", 0, omp_get_max_threads(), git};
    progress.begin_run(run.file_stem(), run.config.training.steps);
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_ptr<Task> task;
    RunOutcome outcome;
    try {
      task = options.tasks.make(run.config.task, run.label + ": task");
      outcome = train_run(run.config, *task, RunOutputs{files.curve, files.checkpoint, s.previous.empty()}, progress);
    } catch (const Error& e) {
      outcome.status = "failed";
      outcome.failure_reason = e.what();
    }
    context.end = utc_timestamp();
    context.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    write_file_atomically(files.result, make_result(run, outcome, task.get(), context).dump(2) + "\n");
    if (outcome.status == "done") {
      ++summary.done;
      progress.end_run(fmt::format("{} done in {}: {}", run.file_stem(), format_duration(context.wall_seconds),
                                   metrics_summary(outcome.metrics, task.get())));
    } else {
      ++(outcome.status == "nan" ? summary.nan : summary.failed);
      progress.end_run(fmt::format("{} {} at step {}: {}", run.file_stem(), outcome.status, outcome.failure_step,
                                   outcome.failure_reason));
    }
  }
  return summary;
}

}  // namespace pathbench
