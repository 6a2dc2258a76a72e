// What `pathbench run --dry-run` prints: each run of the shard with what a sweep would do with it
// (skip, run, resume, rerun) and whether a worker holds it now, and a count of each.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "experiments/sweep_runner.h"

namespace pathbench {

// The plan of `states` (the shard of a sweep of `planned` runs): a heading, the counts, then one line
// per run: "<position>  <stem>  <state>  <steps> steps  <axes>", a run's claim (its host, pid and
// heartbeat age at `now`, seconds since the Unix epoch) after it where it has one.
std::string sweep_plan_text(const std::vector<RunState>& states, size_t planned, const SweepOptions& options,
                            double now);

}  // namespace pathbench
