// `pathbench run CONFIG.json`: expand and validate a sweep, then train its runs (this shard's, not
// yet done) and write one result JSON and curve per run.
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/optim/training_backend.h"
#include "experiments/cli_checks.h"
#include "experiments/commands.h"
#include "experiments/run_claim.h"
#include "experiments/run_metadata.h"
#include "experiments/sweep_plan_text.h"
#include "experiments/sweep_runner.h"
#include "experiments/worker_pool.h"

namespace pathbench {

namespace {

struct RunCommandOptions {
  std::string config;
  std::vector<std::string> sets;
  std::string out;
  std::string device;
  std::string shard;
  int64_t threads = -1;
  int64_t jobs = 1;
  std::string gpus;
  bool dry_run = false;
};

std::string default_out_dir(const std::string& config) {
  return (std::filesystem::path("results") / std::filesystem::path(config).stem()).string();
}

void run_command(const RunCommandOptions& o) {
  std::vector<Override> overrides = parse_overrides(o.sets);
  if (!o.device.empty()) overrides.push_back(Override{"device", o.device});
  if (o.threads >= 0) overrides.push_back(Override{"threads", o.threads});

  SweepOptions options;
  options.config_file = o.config;
  options.out_dir = o.out.empty() ? default_out_dir(o.config) : o.out;
  if (!o.shard.empty())
    options.shard = parse_shard(o.shard);
  else if (auto slurm = slurm_array_shard([](const char* name) { return std::getenv(name); }))
    options.shard = *slurm;
  options.jobs = o.jobs;
  if (!o.gpus.empty()) options.gpus = parse_gpu_list(o.gpus);

  const std::vector<PlannedRun> runs =
      plan_runs(load_config_file(o.config), overrides, config_source(o.config, o.sets), options.tasks);
  if (o.dry_run) {
    const json git = source_git_state();  // a bad PATHBENCH_GIT_COMMIT stops it before the listing
    const std::vector<RunState> states = shard_states(runs, options);
    fmt::print("{}", sweep_plan_text(states, runs.size(), options, unix_now()));
    std::set<std::string> devices;
    for (const RunState& s : states) devices.insert(s.run->config.device);
    for (const std::string& device : devices) try {
        check_device_available(device);
      } catch (const Error& e) {
        fmt::print("note: {} (a real run stops here)\n", e.what());
      }
    try {
      check_results_folder_writable(options.out_dir);
    } catch (const Error& e) {
      fmt::print("note: {} (a real run stops here)\n", e.what());
    }
    fmt::print("results record git {}\n", git.dump());
    fmt::print("every run is valid (dry run: nothing trained)\n");
    return;
  }
  SweepProgress progress(stdout, SweepProgress::detect(stdout));
  const SweepSummary s = run_sweep(runs, options, progress);
  progress.message(fmt::format("finished: {} done, {} NaN, {} failed, {} skipped (already done){}; results in {}",
                               s.done, s.nan, s.failed, s.skipped,
                               s.interrupted > 0 ? fmt::format(", {} interrupted", s.interrupted) : "",
                               options.out_dir));
  if (s.stop_signal != 0 || s.interrupted > 0) {
    const std::string what = fmt::format(
        "stopped{}: {} runs interrupted after a step, {} not started; run the same command again to continue them "
        "(interrupted runs resume from their checkpoints where training.checkpoint_every > 0, and start again "
        "otherwise)",
        s.stop_signal != 0 ? fmt::format(" by signal {}", s.stop_signal) : " (a worker was signalled)", s.interrupted,
        s.in_shard - s.skipped - s.done - s.nan - s.failed - s.interrupted);
    if (s.stop_signal != 0) throw StoppedBySignal(what, s.stop_signal);
    throw Error(what);
  }
  if (s.failed > 0)
    throw Error(fmt::format("{} of {} runs failed (their result files give the reason)", s.failed,
                            s.done + s.nan + s.failed));
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunCommandOptions>();
  CLI::App* cmd = app.add_subcommand("run", "train every run of a config or sweep; write one result JSON and curve per run");
  cmd->footer(
      "A sweep expands its grid and zip blocks; every run is validated before any starts. Each run writes "
      "<out>/<id>-<hash>.json (written atomically) and <id>-<hash>.curve.jsonl. Runs whose result says done "
      "are skipped, so an interrupted sweep resumes by running the same command (with "
      "training.checkpoint_every > 0 a killed run continues from its last checkpoint). SIGTERM or SIGINT (a "
      "scheduler's time limit, timeout, Ctrl-C) stops every run after its current step with a result with "
      "status interrupted (how far it got, no metrics) and, with checkpoints on, a checkpoint, so the same "
      "command resumes them there (without checkpoints they start again), and the command exits with 128 + "
      "the signal (143, 130), as a process the signal ended; a second signal stops at once. A run that goes NaN "
      "is recorded with status nan; a run that fails is recorded with its reason, the sweep goes on, and "
      "the command exits with status 1 at the end. A worker claims each run with <out>/<id>-<hash>.<n>.claim "
      "before training it, so several processes or hosts (or Slurm array tasks) may share one --out: a claim "
      "whose process is gone, or whose heartbeat is over a minute old, is taken over. "
      "Keys: docs/config-reference.md.");
  cmd->add_option("config", o->config, "the config JSON file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--set", o->sets,
                  "override a key: key.path=value (value as JSON, else a string); grid.key=[...] or zip.key=[...] "
                  "sweeps it; repeatable, later ones win; see docs/config-reference.md")
      ->allow_extra_args(false);
  cmd->add_option("--out", o->out, "results folder (default: results/<the config file's name without .json>)");
  cmd->add_option("--device", o->device, "device of every run, same as --set device=...")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--shard", o->shard,
                  "run shard i of n (0 <= i < n): the runs at positions i, i+n, ... of the sweep (default: the "
                  "Slurm array task from SLURM_ARRAY_TASK_ID/COUNT, else everything)");
  cmd->add_option("--threads", o->threads, "CPU threads of every run, same as --set threads=N (0: OpenMP's default)")
      ->check(integer_at_least(0));
  cmd->add_option("--jobs", o->jobs,
                  "runs trained at once: worker processes per GPU named by --gpus, else in all (on the CPU they "
                  "split the threads); workers claim runs through claim files in --out")
      ->check(CLI::Range(int64_t(1), int64_t(256)));
  cmd->add_option("--gpus", o->gpus,
                  "GPUs to place workers on: 'all' or indices such as 0,2 (--jobs workers on each); the runs must "
                  "have device cuda");
  cmd->add_flag("--dry-run", o->dry_run,
                "validate every run and list them with their state (done, running: claimed by a live worker, to "
                "resume, to rerun, to run) and a count of each; train nothing");
  cmd->callback([o]() { run_command(*o); });
}

}  // namespace pathbench
