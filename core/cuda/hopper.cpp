// The run-time choice between the Hopper kernels and their portable counterparts (hopper.h).
#include "core/cuda/hopper.h"

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>

#include "core/cuda/check.h"

namespace pathbench::cuda {

namespace {

std::atomic<bool> switched_on{true};
std::atomic<int64_t> launches{0};

#ifdef PATHBENCH_CUDA_SM90A
enum class DeviceKind : int { unknown = 0, hopper, other };
std::array<std::atomic<DeviceKind>, 64> device_kinds{};  // by device ordinal

bool current_device_is_hopper() {
  int device = 0;
  PATHBENCH_CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= int(device_kinds.size())) return false;
  DeviceKind kind = device_kinds[device].load(std::memory_order_relaxed);
  if (kind == DeviceKind::unknown) {
    int major = 0, minor = 0;
    PATHBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    PATHBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    kind = major == 9 && minor == 0 ? DeviceKind::hopper : DeviceKind::other;
    device_kinds[device].store(kind, std::memory_order_relaxed);
  }
  return kind == DeviceKind::hopper;
}
#endif

}  // namespace

bool hopper_kernels_built() {
#ifdef PATHBENCH_CUDA_SM90A
  return true;
#else
  return false;
#endif
}

bool hopper_kernels_available() {
#ifdef PATHBENCH_CUDA_SM90A
  return current_device_is_hopper();
#else
  return false;
#endif
}

bool hopper_kernels() { return switched_on.load(std::memory_order_relaxed) && hopper_kernels_available(); }

void set_hopper_kernels(bool enabled) { switched_on.store(enabled, std::memory_order_relaxed); }

bool choose_hopper_form() {
  if (!hopper_kernels()) return false;
  launches.fetch_add(1, std::memory_order_relaxed);
  return true;
}

int64_t hopper_launches() { return launches.load(std::memory_order_relaxed); }

}  // namespace pathbench::cuda
