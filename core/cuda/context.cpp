// The GPU context: stream and cuBLAS handle setup, staging buffers.
#include "core/cuda/context.h"

#include "core/device.h"

namespace pathbench::cuda {

namespace {
constexpr size_t kBlasWorkspaceBytes = size_t(32) << 20;  // cuBLAS's recommendation for Hopper
}

Context::Context(Precision precision) : precision_(precision) {
  apply_gpu_wait_policy();  // before the process's first GPU context
  PATHBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  PATHBENCH_CUBLAS_CHECK(cublasCreate(&blas_));
  PATHBENCH_CUBLAS_CHECK(cublasSetStream(blas_, stream_));
  blas_workspace_.reserve(kBlasWorkspaceBytes);
  PATHBENCH_CUBLAS_CHECK(cublasSetWorkspace(blas_, blas_workspace_.data(), kBlasWorkspaceBytes));
}

Context::~Context() {
  if (blas_) cublasDestroy(blas_);
  if (stream_) cudaStreamDestroy(stream_);
}

bool Context::reserve_staging(size_t n) {
  if (precision_ != Precision::bf16) return false;
  const bool a = staging_a_.reserve(n);
  const bool b = staging_b_.reserve(n);
  return a || b;
}

void Context::synchronize() const { PATHBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

}  // namespace pathbench::cuda
