// The run-time choice between the Hopper kernels and their portable counterparts (hopper.h).
#include "core/cuda/hopper.h"

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>

#include "core/cuda/check.h"

namespace pathbench::cuda {

namespace {

std::atomic<bool> switched_on{true};

// Per device ordinal: 0 not yet asked, 1 compute capability 9.0, 2 another.
std::array<std::atomic<int>, 64> hopper_device{};

bool current_device_is_hopper() {
  int device = 0;
  PATHBENCH_CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= int(hopper_device.size())) return false;
  int known = hopper_device[device].load(std::memory_order_relaxed);
  if (known == 0) {
    int major = 0, minor = 0;
    PATHBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    PATHBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    known = major == 9 && minor == 0 ? 1 : 2;
    hopper_device[device].store(known, std::memory_order_relaxed);
  }
  return known == 1;
}

}  // namespace

bool hopper_kernels_available() {
#ifdef PATHBENCH_CUDA_SM90A
  return current_device_is_hopper();
#else
  return false;
#endif
}

bool hopper_kernels() { return switched_on.load(std::memory_order_relaxed) && hopper_kernels_available(); }

void set_hopper_kernels(bool enabled) { switched_on.store(enabled, std::memory_order_relaxed); }

}  // namespace pathbench::cuda
