// Running a planned sweep: for each run in this shard whose result is not yet "done", claim it,
// train it and write its result atomically. A failed or NaN run is recorded and the sweep goes on;
// a killed sweep resumes where it stopped, losing at most the runs in flight. With jobs > 1 (or
// GPUs named) a pool of worker processes goes through the sweep together; any number of
// processes, on any hosts that share the results folder, can work on one sweep at once, since a
// run is trained only by the worker holding its claim (run_claim.h).
#pragma once
#include <filesystem>
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
  int64_t jobs = 1;            // worker processes per GPU (or on the CPU)
  std::vector<int> gpus;       // CUDA devices the workers are placed on (empty: as the runs' device says)
  double claim_stale_after_s = 60;  // a claim whose heartbeat is older than this is taken over
};

struct SweepSummary {
  int64_t planned = 0;    // runs in the sweep
  int64_t in_shard = 0;   // runs of this shard
  int64_t skipped = 0;    // already done
  int64_t done = 0, failed = 0, nan = 0;  // of the runs trained now
  int64_t interrupted = 0;                // stopped by a signal, to resume (its result says interrupted)
  int stop_signal = 0;                    // the signal that stopped the sweep (0: none)

  // The counter of a run's final status: done, nan, interrupted, else failed.
  int64_t& count_of(const std::string& status) {
    return status == "done" ? done : status == "nan" ? nan : status == "interrupted" ? interrupted : failed;
  }
};

// What each run of the shard would do: "done" (skip) or "run" (with "failed"/"nan" from an earlier
// attempt noted), without training anything.
struct RunState {
  const PlannedRun* run;
  size_t position;        // in the expanded sweep
  std::string previous;   // status of an existing result ("" when none)
};
std::vector<RunState> shard_states(const std::vector<PlannedRun>& runs, const SweepOptions& options);

// Whether a run whose result has this status ("" without one) continues from its checkpoint, where
// checkpoints are on and one exists: without a result (killed, say) or an interrupted one. Any other
// earlier attempt (failed, NaN) starts afresh.
bool resumes_from_checkpoint(const std::string& previous);

// Throws pathbench::Error naming the folder when results cannot be written to `dir` (or to the
// folder that would hold it); writes nothing.
void check_results_folder_writable(const std::string& dir);

SweepSummary run_sweep(const std::vector<PlannedRun>& runs, const SweepOptions& options, SweepProgress& progress);

// One worker's pass through the shard: every run not done, not attempted since `sweep_start` and
// not claimed by a live worker is claimed, trained and recorded. Counts the runs this worker trained.
SweepSummary work_through_sweep(const std::vector<RunState>& states, const SweepOptions& options, const json& git,
                                std::filesystem::file_time_type sweep_start, SweepEvents& events);

}  // namespace pathbench
