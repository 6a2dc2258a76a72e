// The worker pool of `pathbench run --jobs N [--gpus LIST]`: N worker processes per GPU (or N on
// the CPU, splitting the CPU threads) go through one sweep together, each claiming runs as
// work_through_sweep does. Workers report over pipes; the parent shows one combined progress
// display. A worker that dies (a signal, a CUDA error, out of memory) has its run recorded as failed
// with the reason, and a new worker takes its place. The parent never starts CUDA itself: GPU
// questions go to a short-lived child process, so that the forked workers can.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/sweep_runner.h"

namespace pathbench {

// The number of GPUs visible, asked in a child process (0 without the CUDA backend or a GPU).
int probe_cuda_device_count();

// "all" or a comma-separated list of device indices ("0,2"), checked against the visible GPUs.
// Throws pathbench::Error naming the option and the devices.
std::vector<int> parse_gpu_list(const std::string& text);

// Before a pool starts: runs that need CUDA have a GPU, and --gpus only places CUDA runs.
void check_pool_devices(const SweepOptions& options, bool needs_cuda);

SweepSummary run_worker_pool(const std::vector<RunState>& states, const SweepOptions& options, const json& git,
                             std::filesystem::file_time_type sweep_start, SweepProgress& progress);

}  // namespace pathbench
