// `pathbench slurm CONFIG.json`: validate a sweep and write a Slurm job-array script that runs it.
#include <fmt/format.h>

#include <filesystem>

#include "core/error.h"
#include "experiments/cli_checks.h"
#include "experiments/commands.h"
#include "experiments/file_output.h"
#include "experiments/run_plan.h"
#include "experiments/slurm_script.h"

namespace pathbench {

namespace {

struct SlurmCommandOptions {
  std::string config, out, results;
  std::vector<std::string> sets;
  SlurmOptions script;
};

void slurm_command(SlurmCommandOptions o) {
  namespace fs = std::filesystem;
  const std::vector<PlannedRun> runs =
      plan_runs(load_config_file(o.config), parse_overrides(o.sets), config_source(o.config, o.sets),
                registry_task_provider());
  bool any_cuda = false;
  for (const auto& r : runs) any_cuda = any_cuda || r.config.device == "cuda";
  SlurmOptions& s = o.script;
  s.pathbench = fs::read_symlink("/proc/self/exe").string();
  s.config = fs::absolute(o.config).lexically_normal().string();
  s.results = fs::absolute(o.results.empty() ? fs::path("results") / fs::path(o.config).stem() : fs::path(o.results))
                  .lexically_normal()
                  .string();
  s.workdir = fs::current_path().string();
  s.sets = o.sets;
  s.runs = int64_t(runs.size());
  if (s.gpus_per_task < 0) s.gpus_per_task = any_cuda ? 1 : 0;
  if (s.job_name.empty()) s.job_name = "pathbench-" + fs::path(o.config).stem().string();
  // Slurm opens the --output files before the script runs, so their folder must exist already.
  std::error_code ec;
  fs::create_directories(s.results, ec);
  if (ec) throw Error(fmt::format("cannot create the results folder '{}': {}", s.results, ec.message()));
  const std::string text = slurm_script(s);
  if (o.out.empty()) {
    fmt::print("{}", text);
  } else {
    write_file_atomically(o.out, text);
    fmt::print("wrote {} ({} runs); submit with: sbatch {}\n", o.out, runs.size(), o.out);
  }
}

}  // namespace

void add_slurm_command(CLI::App& app) {
  auto o = std::make_shared<SlurmCommandOptions>();
  o->script.job_name = "";
  o->script.gpus_per_task = -1;
  CLI::App* cmd = app.add_subcommand(
      "slurm", "validate a sweep and write a Slurm job-array script: array task i runs shard i/n of the sweep");
  cmd->add_option("config", o->config, "the config JSON file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--set", o->sets, "override a key, as for `run` (passed on to every task); repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--out", o->out, "write the script here (default: print it)");
  cmd->add_option("--results", o->results,
                  "results folder of the runs, created now: Slurm opens the tasks' log files there before they "
                  "start (default: results/<the config file's name without .json>)");
  cmd->add_option("--shards", o->script.shards, "array tasks (default: one per run)")->check(integer_at_least(1));
  cmd->add_option("--time", o->script.time, "time limit of each task")->capture_default_str();
  cmd->add_option("--partition", o->script.partition, "Slurm partition (default: the cluster's)");
  cmd->add_option("--cpus-per-task", o->script.cpus_per_task, "CPU cores per task (also the runs' threads)")
      ->check(integer_at_least(1))
      ->capture_default_str();
  cmd->add_option("--gpus-per-task", o->script.gpus_per_task,
                  "GPUs per task (default: 1 when any run has device cuda, else 0)")
      ->check(integer_at_least(0));
  cmd->add_option("--mem", o->script.mem, "memory per task, e.g. 32G (default: the cluster's)");
  cmd->add_option("--job-name", o->script.job_name, "job name (default: pathbench-<config file name without .json>)");
  cmd->callback([o]() { slurm_command(*o); });
}

}  // namespace pathbench
