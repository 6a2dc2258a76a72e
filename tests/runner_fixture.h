// Shared pieces of the runner tests: a small fixture task (running parity of random bits), a tiny
// run config that trains in well under a second, fresh temporary folders, and the CLI.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "experiments/task_provider.h"

namespace pathbench::testing {

// Task "parity": tokens are random bits; the target at position t is the parity of bits 0..t.
// Options: length (training length), fail_at_example (training example index that throws a
// pathbench::Error; -1: never), kill_at_example (training example index that kills the process with
// SIGKILL, for worker-pool tests; -1: never). Eval splits "short" (length) and "long" (2·length), with a
// per_length breakdown; metrics accuracy and error_rate (primary).
TaskProvider fixture_tasks();

// Makes the parity task send `signal` to process `target` when it generates training example
// `index` for seed `seed` (as a scheduler's SIGTERM would arrive, but at a known step); target 0
// turns it off. Not part of the task config, so run hashes do not change; forked workers inherit it.
void signal_at_parity_example(uint64_t seed, int64_t index, pid_t target, int signal);

// A run config of a 1-layer width-16 model on the parity task, 6 steps of batch 4.
json tiny_run_config();

// The lines of a curve file, parsed; and the same without their timing fields (tokens_per_s,
// elapsed_s), which differ between runs of the same config.
std::vector<json> curve_lines(const std::string& path);
std::vector<json> curve_values(const std::string& path);

// An empty folder under the system's temporary folder, unique to `name` and this process.
std::string fresh_temp_dir(const std::string& name);

// Parses (and so runs) a command line of the pathbench CLI (without the program name).
void cli(std::vector<std::string> args);

}  // namespace pathbench::testing
