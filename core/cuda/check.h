// Return-code checks for the CUDA runtime and cuBLAS. Any failure (out of memory, a failed launch,
// an error surfacing at a synchronization) becomes a one-line pathbench::Error naming the call, the
// error and the source location, so a GPU run never continues on a failed operation.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>

namespace pathbench::cuda {

[[noreturn]] void throw_gpu_error(const char* call, const char* error, const char* file, int line);

inline void check_cuda_call(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) throw_gpu_error(call, cudaGetErrorString(status), file, line);
}
inline void check_cublas_call(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_gpu_error(call, cublasGetStatusString(status), file, line);
}

// cudaMalloc that reports the size asked for and the memory free when it fails.
void* device_allocate(size_t bytes, const char* what);
// cudaMallocHost (page-locked host memory, for asynchronous copies inside CUDA graphs).
void* pinned_allocate(size_t bytes, const char* what);

}  // namespace pathbench::cuda

#define PATHBENCH_CUDA_CHECK(call) ::pathbench::cuda::check_cuda_call((call), #call, __FILE__, __LINE__)
#define PATHBENCH_CUBLAS_CHECK(call) ::pathbench::cuda::check_cublas_call((call), #call, __FILE__, __LINE__)
// After a kernel launch: a bad configuration or an earlier asynchronous fault shows up here.
#define PATHBENCH_CUDA_CHECK_LAUNCH(kernel) \
  ::pathbench::cuda::check_cuda_call(cudaGetLastError(), "launch of " kernel, __FILE__, __LINE__)
