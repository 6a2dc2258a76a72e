// GPU error reporting: formats CUDA and cuBLAS failures as one-line pathbench::Error messages.
#include "core/cuda/check.h"

#include <fmt/format.h>

#include <string_view>

#include "core/error.h"

namespace pathbench::cuda {

namespace {
// The path from the repository's top folder (core/…), not the build machine's absolute path.
std::string_view source_path(const char* file) {
  std::string_view path(file);
  const size_t at = path.rfind("/core/");
  return at == std::string_view::npos ? path : path.substr(at + 1);
}
}  // namespace

void throw_gpu_error(const char* call, const char* error, const char* file, int line) {
  throw Error(fmt::format("GPU error: {} failed: {} (at {}:{})", call, error, source_path(file), line));
}

void* device_allocate(size_t bytes, const char* what) {
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, bytes);
  if (status == cudaSuccess) return p;
  cudaGetLastError();  // clear the (non-sticky) allocation error
  size_t free_bytes = 0, total_bytes = 0;
  cudaMemGetInfo(&free_bytes, &total_bytes);
  throw Error(fmt::format("GPU error: allocating {:.1f} MiB of device memory for {} failed: {} ({:.1f} of {:.1f} MiB free)",
                          double(bytes) / 1048576.0, what, cudaGetErrorString(status),
                          double(free_bytes) / 1048576.0, double(total_bytes) / 1048576.0));
}

void* pinned_allocate(size_t bytes, const char* what) {
  void* p = nullptr;
  const cudaError_t status = cudaMallocHost(&p, bytes);
  if (status == cudaSuccess) return p;
  cudaGetLastError();
  throw Error(fmt::format("GPU error: allocating {:.1f} MiB of page-locked host memory for {} failed: {}",
                          double(bytes) / 1048576.0, what, cudaGetErrorString(status)));
}

}  // namespace pathbench::cuda
