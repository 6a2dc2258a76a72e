// Device discovery: CUDA availability (when built with CUDA) and a CPU description.
#include "core/device.h"

#include <fstream>
#include <thread>

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
