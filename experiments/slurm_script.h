// A Slurm job-array script for a sweep: array task i runs `pathbench run --shard i/n`, so n tasks
// cover every run exactly once and each resumes like any other invocation.
#pragma once
#include <string>
#include <vector>

namespace pathbench {

struct SlurmOptions {
  std::string pathbench;          // absolute path of the pathbench binary
  std::string config;             // absolute path of the config file
  std::string results;            // absolute results folder
  std::string workdir;            // folder the job starts in
  std::vector<std::string> sets;  // --set overrides, passed through
  int64_t runs = 0;               // runs in the sweep
  int64_t shards = 0;             // array tasks (0: one per run; capped at the number of runs)
  std::string job_name = "pathbench";
  std::string time = "04:00:00";
  std::string partition;          // "": the cluster's default
  int64_t cpus_per_task = 8;
  int64_t gpus_per_task = 0;
  std::string mem;                // "": the cluster's default
};

// Throws pathbench::Error when a value that lands in the script's header holds a control character.
std::string slurm_script(const SlurmOptions& options);

// `text` quoted for a POSIX shell.
std::string shell_quote(const std::string& text);

}  // namespace pathbench
