// The head dimensions the fused CUDA attention kernels are compiled for. Free of CUDA includes, so
// config validation checks a `device: cuda` run against the same list in builds without CUDA.
#pragma once
#include <array>
#include <cstdint>
#include <string>

namespace pathbench {

// One kernel instantiation per entry (with_head_dim in tiles.cuh walks this list).
inline constexpr std::array<int, 4> kGpuHeadDims = {16, 32, 64, 128};

constexpr bool gpu_head_dim_supported(int64_t head_dim) {
  for (int d : kGpuHeadDims)
    if (d == head_dim) return true;
  return false;
}

// "16, 32, 64 or 128", for error messages.
inline std::string gpu_head_dims_text() {
  std::string text;
  for (size_t i = 0; i < kGpuHeadDims.size(); ++i)
    text += (i == 0 ? "" : i + 1 == kGpuHeadDims.size() ? " or " : ", ") + std::to_string(kGpuHeadDims[i]);
  return text;
}

}  // namespace pathbench
