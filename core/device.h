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

}  // namespace pathbench
