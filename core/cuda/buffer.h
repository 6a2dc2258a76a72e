// Owning buffers of device memory (cudaMalloc) and page-locked host memory (cudaMallocHost).
// Contents are uninitialized; growing reallocates and loses them, and reserve() says when it did, so
// holders of raw pointers (a captured CUDA graph) know to rebuild. Also whole-array copies between
// host and device, with or without a change of type.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "core/cuda/check.h"

namespace pathbench::cuda {

template <typename T, bool Pinned>
class OwnedBuffer {
 public:
  explicit OwnedBuffer(const char* what = "a buffer") : what_(what) {}
  OwnedBuffer(size_t n, const char* what) : what_(what) { reserve(n); }
  OwnedBuffer(const OwnedBuffer&) = delete;
  OwnedBuffer& operator=(const OwnedBuffer&) = delete;
  OwnedBuffer(OwnedBuffer&& o) noexcept : what_(o.what_), ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  OwnedBuffer& operator=(OwnedBuffer&& o) noexcept {
    std::swap(what_, o.what_);
    std::swap(ptr_, o.ptr_);
    std::swap(size_, o.size_);
    return *this;
  }
  ~OwnedBuffer() { release(); }

  // Ensures room for n elements; returns true when it (re)allocated.
  bool reserve(size_t n) {
    if (n <= size_) return false;
    release();
    void* p = Pinned ? pinned_allocate(n * sizeof(T), what_) : device_allocate(n * sizeof(T), what_);
    ptr_ = static_cast<T*>(p);
    size_ = n;
    return true;
  }

  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  size_t size() const { return size_; }

 private:
  void release() {
    if (!ptr_) return;
    if (Pinned)
      cudaFreeHost(ptr_);
    else
      cudaFree(ptr_);
    ptr_ = nullptr;
    size_ = 0;
  }

  const char* what_;
  T* ptr_ = nullptr;
  size_t size_ = 0;
};

template <typename T>
using DeviceBuffer = OwnedBuffer<T, false>;
template <typename T>
using PinnedBuffer = OwnedBuffer<T, true>;

// Whole-array copies queued on `stream`, which then is synchronized (the model's streams do not
// synchronize with the legacy default stream): for setup, tests and downloads outside a training step.
template <typename T>
void copy_to_device(T* dst, const T* src, size_t n, cudaStream_t stream) {
  PATHBENCH_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(T), cudaMemcpyHostToDevice, stream));
  PATHBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
}
template <typename T>
void copy_to_host(T* dst, const T* src, size_t n, cudaStream_t stream) {
  PATHBENCH_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(T), cudaMemcpyDeviceToHost, stream));
  PATHBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
}

// The same with a type change on the host: host values H stored on the device as S (float or bf16),
// converted through float as the kernels' own storage rounds them.
template <typename S, typename H>
void copy_to_device_as(S* dst, const H* src, size_t n, cudaStream_t stream) {
  std::vector<S> stored(n);
  for (size_t i = 0; i < n; ++i) stored[i] = S(float(src[i]));
  copy_to_device(dst, stored.data(), n, stream);
}
template <typename H, typename S>
void copy_to_host_as(H* dst, const S* src, size_t n, cudaStream_t stream) {
  std::vector<S> stored(n);
  copy_to_host(stored.data(), src, n, stream);
  for (size_t i = 0; i < n; ++i) dst[i] = H(float(stored[i]));
}

}  // namespace pathbench::cuda
