// Which compute devices this build and machine offer.
#pragma once
#include <string>

namespace pathbench {

// True when the build has the CUDA backend.
bool cuda_backend_built();
// The number of visible GPUs (0 without the CUDA backend or a GPU).
int cuda_device_count();
// True when the build has the CUDA backend and at least one GPU is visible.
bool cuda_device_available();
// A one-line description of the CPU or GPU, for results and benchmarks.
std::string cpu_description();
// The first GPU's name, memory and compute capability ("none" without CUDA or a GPU).
std::string cuda_device_description();

// How a host thread waits for the GPU, set by the environment variable PATHBENCH_CUDA_SYNC: spin
// (busy-wait: the lowest latency), yield (busy-wait that yields the core to other threads), block
// (sleep until the GPU signals: frees the core, at some latency per wait). Unset: CUDA's own
// choice, which spins while a process has fewer GPU contexts than the machine has cores, so each
// of several worker processes keeps a core busy while it waits.
enum class GpuWait { cuda_default, spin, yield, block };
// A PATHBENCH_CUDA_SYNC value (null or empty: cuda_default); any other value throws pathbench::Error.
GpuWait parse_gpu_wait(const char* value);
// Applies PATHBENCH_CUDA_SYNC to this process before its first GPU context (once; nothing without
// the CUDA backend). Throws pathbench::Error for a bad value or when CUDA refuses the setting.
void apply_gpu_wait_policy();

}  // namespace pathbench
