// Host-side conventions shared by the CUDA attention kernels (softmax, RoPE, stick-breaking, PaTH),
// free of Eigen so that g++ and nvcc translation units can both include it.
//
// Storage: the [BH, T, D] tensors (queries, keys, values, outputs and their gradients) are float or
// bf16 (`bf16` below); every per-token vector (log-sum-exp, cumulative log gates, β and their
// gradients) is float. Arithmetic accumulates in fp32 always; fp32 storage computes with fp32 FMAs
// (no tf32). All pointers are device pointers; work is queued on the given stream.
//
// Workspace: a function that needs scratch memory takes a caller-owned device buffer of at least
// the size its *_workspace_bytes function returns (it may be null when that size is 0), so the
// caller can plan buffers once and capture the calls in a CUDA graph.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace pathbench::cuda {

using bf16 = __nv_bfloat16;

struct Workspace {
  void* data = nullptr;
  size_t bytes = 0;
};

// Throws pathbench::Error("cuda: <what>: <CUDA's message>") when status is not cudaSuccess.
void check_cuda(cudaError_t status, const std::string& what);
// Checks the launch that just happened (cudaGetLastError), naming the kernel.
void check_launch(const std::string& kernel);
// Throws pathbench::Error naming `function` when the workspace is smaller than `needed` bytes.
void check_workspace(const Workspace& ws, size_t needed, const std::string& function);
// Throws pathbench::Error unless head_dim is one of kGpuHeadDims (gpu_head_dims.h) and length,
// batch_heads > 0.
void check_attention_shape(int64_t batch_heads, int64_t length, int64_t head_dim, const std::string& function);

// Carves consecutive 256-byte-aligned pieces out of a workspace (sizing pass when data is null).
class WorkspaceCarver {
 public:
  explicit WorkspaceCarver(void* base) : base_(static_cast<char*>(base)) {}
  template <typename T>
  T* take(size_t count) {
    offset_ = (offset_ + 255) / 256 * 256;
    T* p = base_ ? reinterpret_cast<T*>(base_ + offset_) : nullptr;
    offset_ += count * sizeof(T);
    return p;
  }
  size_t bytes() const { return offset_; }

 private:
  char* base_;
  size_t offset_ = 0;
};

}  // namespace pathbench::cuda

namespace pathbench::cuda::detail {

// out[r] = Σ_d a[r, d]·b[r, d] for rows × cols inputs (fp32 sums), e.g. δ = rowsum(dO ∘ O).
template <typename S>
void row_dot(const S* a, const S* b, float* out, int64_t rows, int64_t cols, cudaStream_t stream);
// dst[i] = S(src[i]) for n values.
template <typename S>
void convert_from_float(const float* src, S* dst, int64_t n, cudaStream_t stream);

}  // namespace pathbench::cuda::detail
