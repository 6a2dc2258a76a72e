// run_sweep: check and announce the sweep, then go through it in this process or in a worker
// pool; work_through_sweep: one worker's claim-train-record loop.
#include "experiments/sweep_runner.h"

#include <fmt/format.h>
#include <omp.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/error.h"
#include "core/optim/training_backend.h"
#include "experiments/file_output.h"
#include "experiments/result_file.h"
#include "experiments/run_claim.h"
#include "experiments/run_metadata.h"
#include "experiments/stop_signal.h"
#include "experiments/worker_pool.h"

namespace pathbench {

namespace fs = std::filesystem;

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

// The status a worker acts on: "done" (skip), "attempted" (failed or NaN since the sweep began:
// skip), else "", "interrupted" (resume it, whenever it was stopped) or the status of an earlier
// sweep's failed attempt (run it again).
std::string current_status(const std::string& result_path, fs::file_time_type sweep_start) {
  const std::string status = result_status(result_path);
  if (status == "done" || status.empty() || status == "interrupted") return status;
  std::error_code ec;
  const auto written = fs::last_write_time(result_path, ec);
  return !ec && written >= sweep_start ? "attempted" : status;
}

}  // namespace

bool resumes_from_checkpoint(const std::string& previous) { return previous.empty() || previous == "interrupted"; }

namespace {

// Trains one claimed run and writes its result.
RunOutcome train_and_record(const PlannedRun& run, const std::string& previous, const SweepOptions& options,
                            const json& git, int default_threads, SweepEvents& events) {
  const RunFiles files = run_files(options.out_dir, run);
  const bool resumes = resumes_from_checkpoint(previous);
  if (!resumes) {
    // An earlier attempt failed: start afresh, and let a kill of this attempt resume from its own
    // checkpoints.
    std::error_code ignored;
    fs::remove(files.result, ignored);
    fs::remove(files.checkpoint, ignored);
    fs::remove(files.spike_checkpoint, ignored);
    fs::remove(files.model, ignored);
  }
  omp_set_num_threads(run.config.threads > 0 ? int(run.config.threads) : default_threads);
  RunContext context{options.config_file, utc_timestamp(), "", 0, omp_get_max_threads(), git};
  events.begin_run(run.file_stem(), run.config.training.steps);
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Task> task;
  RunOutcome outcome;
  try {
    task = options.tasks.make(run.config.task, run.label + ": task");
    const std::string starts = (fs::path(options.out_dir) / ".held-out-starts").string();
    const RunOutputs outputs{files.curve, files.checkpoint, resumes, starts, files.spike_checkpoint, files.model};
    outcome = train_run(run.config, *task, outputs, events);
  } catch (const Error& e) {
    outcome.status = "failed";
    outcome.failure_reason = e.what();
  }
  // An interrupted run's result says how far it got, with no metrics (a result's metrics are its final
  // evaluation's; its curve has the periodic ones): tables leave it out and list it, and the next
  // sweep resumes the run from its checkpoint and replaces the result.
  if (outcome.status == "interrupted") outcome.metrics = json::object();
  context.end = utc_timestamp();
  context.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  write_file_atomically(files.result, make_result(run, outcome, task.get(), context).dump(2) + "\n");
  if (outcome.status == "done")
    events.end_run("done", fmt::format("{} done in {}: {}", run.file_stem(), format_duration(context.wall_seconds),
                                       metrics_summary(outcome.metrics, task.get())));
  else if (outcome.status == "interrupted")
    events.end_run(outcome.status, fmt::format("{} interrupted: {}", run.file_stem(), outcome.failure_reason));
  else
    events.end_run(outcome.status, fmt::format("{} {} at step {}: {}", run.file_stem(), outcome.status,
                                               outcome.failure_step, outcome.failure_reason));
  return outcome;
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

void check_results_folder_writable(const std::string& dir) {
  fs::path existing = fs::absolute(dir);
  std::error_code ec;
  while (!fs::exists(existing, ec) && existing.has_parent_path() && existing != existing.parent_path())
    existing = existing.parent_path();
  if (!fs::is_directory(existing, ec))
    throw Error(fmt::format("cannot write the results folder '{}': '{}' is not a folder", dir, existing.string()));
  if (::access(existing.c_str(), W_OK | X_OK) != 0)
    throw Error(fmt::format("cannot write the results folder '{}': {} ('{}')", dir, std::strerror(errno),
                            existing.string()));
}

SweepSummary work_through_sweep(const std::vector<RunState>& states, const SweepOptions& options, const json& git,
                                fs::file_time_type sweep_start, SweepEvents& events) {
  SweepSummary summary;
  const int default_threads = omp_get_max_threads();
  for (const RunState& s : states) {
    if (stop_requested()) break;
    const PlannedRun& run = *s.run;
    const std::string result = run_files(options.out_dir, run).result;
    if (s.previous == "done" || current_status(result, sweep_start) == "done" ||
        current_status(result, sweep_start) == "attempted")
      continue;
    const std::unique_ptr<RunClaim> claim =
        RunClaim::try_claim(options.out_dir, run.file_stem(), options.claim_stale_after_s, kClaimHeartbeatSeconds);
    if (!claim) continue;  // a live worker has it
    const std::string previous = current_status(result, sweep_start);  // read again: it may have ended meanwhile
    if (previous == "done" || previous == "attempted") continue;
    const RunOutcome outcome = train_and_record(run, previous, options, git, default_threads, events);
    ++summary.count_of(outcome.status);
  }
  return summary;
}

SweepSummary run_sweep(const std::vector<PlannedRun>& runs, const SweepOptions& options, SweepProgress& progress) {
  const std::vector<RunState> states = shard_states(runs, options);
  const bool pool = options.jobs > 1 || !options.gpus.empty();
  SweepSummary summary;
  summary.planned = int64_t(runs.size());
  summary.in_shard = int64_t(states.size());
  int64_t to_run = 0, total_steps = 0;
  bool needs_cuda = false;
  for (const RunState& s : states) {
    if (s.previous == "done") continue;
    needs_cuda = needs_cuda || s.run->config.device == "cuda";
    // A pool's parent must not start CUDA (its workers could not use it after fork): it asks a child.
    if (!pool) check_device_available(s.run->config.device);
    ++to_run;
    total_steps += s.run->config.training.steps;
  }
  if (pool) check_pool_devices(options, needs_cuda);
  summary.skipped = summary.in_shard - to_run;
  const json git = source_git_state();  // before the folder: a bad PATHBENCH_GIT_COMMIT writes nothing
  check_results_folder_writable(options.out_dir);
  std::error_code ec;
  fs::create_directories(options.out_dir, ec);
  if (ec) throw Error(fmt::format("cannot create the results folder '{}': {}", options.out_dir, ec.message()));
  progress.message(fmt::format("{} runs in the sweep, {} in shard {}, {} already done, {} to run; results in {}",
                               summary.planned, summary.in_shard, options.shard.text(), summary.skipped, to_run,
                               options.out_dir));
  progress.begin_sweep(to_run, total_steps);
  const StopSignals stop_signals;  // SIGTERM/SIGINT from here on: runs stop after a step, resumable
  const auto sweep_start = fs::file_time_type::clock::now();
  const SweepSummary trained = pool ? run_worker_pool(states, options, git, sweep_start, progress)
                                    : work_through_sweep(states, options, git, sweep_start, progress);
  summary.done = trained.done;
  summary.failed = trained.failed;
  summary.nan = trained.nan;
  summary.interrupted = trained.interrupted;
  summary.stop_signal = stop_signal();
  return summary;
}

}  // namespace pathbench
