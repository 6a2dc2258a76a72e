// Running a planned sweep: for each run in this shard whose result is not yet "done", train it and
// write its result atomically. A failed or NaN run is recorded and the sweep goes on; a killed
// sweep resumes where it stopped, losing at most the run in flight.
#pragma once
#include <string>
#include <vector>

#include "experiments/progress.h"
#include "experiments/run_plan.h"
#include "experiments/shard.h"

namespace pathbench {

struct SweepOptions {
  std::string out_dir;
  std::string config_file;  // recorded in results
  Shard shard;
  TaskProvider tasks = registry_task_provider();
};

struct SweepSummary {
  int64_t planned = 0;    // runs in the sweep
  int64_t in_shard = 0;   // runs of this shard
  int64_t skipped = 0;    // already done
  int64_t done = 0, failed = 0, nan = 0;  // of the runs trained now
};

// What each run of the shard would do: "done" (skip) or "run" (with "failed"/"nan" from an earlier
// attempt noted), without training anything.
struct RunState {
  const PlannedRun* run;
  size_t position;        // in the expanded sweep
  std::string previous;   // status of an existing result ("" when none)
};
std::vector<RunState> shard_states(const std::vector<PlannedRun>& runs, const SweepOptions& options);

SweepSummary run_sweep(const std::vector<PlannedRun>& runs, const SweepOptions& options, SweepProgress& progress);

}  // namespace pathbench
