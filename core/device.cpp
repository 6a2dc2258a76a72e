// Device discovery: CUDA availability (when built with CUDA) and a CPU description.
#include "core/device.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

#include "core/error.h"

#ifdef PATHBENCH_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace pathbench {

bool cuda_backend_built() {
#ifdef PATHBENCH_WITH_CUDA
  return true;
#else
  return false;
#endif
}

int cuda_device_count() {
#ifdef PATHBENCH_WITH_CUDA
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
#else
  return 0;
#endif
}

bool cuda_device_available() { return cuda_device_count() > 0; }

std::string cuda_device_description() {
#ifdef PATHBENCH_WITH_CUDA
  cudaDeviceProp prop{};
  if (!cuda_device_available() || cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return "none";
  return std::string(prop.name) + " (" + std::to_string(prop.totalGlobalMem >> 20) + " MiB, compute capability " +
         std::to_string(prop.major) + "." + std::to_string(prop.minor) + ", " +
         std::to_string(prop.multiProcessorCount) + " SMs)";
#else
  return "none";
#endif
}

GpuWait parse_gpu_wait(const char* value) {
  if (!value || !*value) return GpuWait::cuda_default;
  if (!std::strcmp(value, "spin")) return GpuWait::spin;
  if (!std::strcmp(value, "yield")) return GpuWait::yield;
  if (!std::strcmp(value, "block")) return GpuWait::block;
  throw Error(std::string("environment variable PATHBENCH_CUDA_SYNC has value '") + value +
              "' (expected spin, yield or block, or unset for CUDA's default)");
}

void apply_gpu_wait_policy() {
  static std::once_flag applied;
  std::call_once(applied, [] {
    const char* value = std::getenv("PATHBENCH_CUDA_SYNC");
    const GpuWait wait = parse_gpu_wait(value);
#ifdef PATHBENCH_WITH_CUDA
    if (wait == GpuWait::cuda_default) return;
    const unsigned flags = wait == GpuWait::spin    ? cudaDeviceScheduleSpin
                           : wait == GpuWait::yield ? cudaDeviceScheduleYield
                                                    : cudaDeviceScheduleBlockingSync;
    const cudaError_t status = cudaSetDeviceFlags(flags);
    if (status != cudaSuccess)
      throw Error(std::string("PATHBENCH_CUDA_SYNC=") + value + ": CUDA refused the setting (" +
                  cudaGetErrorString(status) + ")");
#else
    (void)wait;
#endif
  });
}

std::string cpu_description() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  return model + " (" + std::to_string(std::thread::hardware_concurrency()) + " hardware threads)";
}

}  // namespace pathbench
