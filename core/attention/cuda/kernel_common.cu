// Error checks and the small element-wise kernels shared by the CUDA attention kernels.
#include <algorithm>
#include <string>

#include "core/attention/cuda/kernel_common.h"
#include "core/attention/cuda/tiles.cuh"
#include "core/attention/gpu_head_dims.h"
#include "core/cuda/storage.cuh"
#include "core/cuda/vector_access.h"
#include "core/error.h"

namespace pathbench::cuda {

void check_cuda(cudaError_t status, const std::string& what) {
  if (status != cudaSuccess) throw Error("cuda: " + what + ": " + cudaGetErrorString(status));
}

void check_launch(const std::string& kernel) { check_cuda(cudaGetLastError(), "launch of " + kernel); }

void check_workspace(const Workspace& ws, size_t needed, const std::string& function) {
  if (needed > 0 && (ws.data == nullptr || ws.bytes < needed))
    throw Error(function + ": workspace of " + std::to_string(ws.bytes) + " bytes is smaller than the " +
                std::to_string(needed) + " bytes needed");
}

void check_attention_shape(int64_t batch_heads, int64_t length, int64_t head_dim, const std::string& function) {
  if (batch_heads <= 0 || length <= 0)
    throw Error(function + ": batch_heads (" + std::to_string(batch_heads) + ") and length (" + std::to_string(length) +
                ") must be positive");
  if (!gpu_head_dim_supported(head_dim))
    throw Error(function + ": head_dim " + std::to_string(head_dim) + " is not supported (" + gpu_head_dims_text() +
                ")");
  if (batch_heads > 65535)
    throw Error(function + ": batch_heads " + std::to_string(batch_heads) + " exceeds the grid limit 65535");
}

namespace detail {

namespace {

// One warp per row: lanes stride over the columns V at a time (V = kVectorWidth: one vector access
// per array), then a warp reduction.
template <int V, typename S>
__global__ void row_dot_kernel(const S* a, const S* b, float* out, int64_t rows, int64_t cols) {
  const int64_t row = int64_t(blockIdx.x) * tiles::kWarps + tiles::warp_id();
  if (row >= rows) return;
  float sum = 0.f;
  for (int64_t c = V * tiles::lane_id(); c < cols; c += 32 * V) {
    float x[V], y[V];
    load_floats(a + row * cols + c, x);
    load_floats(b + row * cols + c, y);
    for (int k = 0; k < V; ++k) sum += x[k] * y[k];
  }
  for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(tiles::kFullMask, sum, off);
  if (tiles::lane_id() == 0) out[row] = sum;
}

// dst[i] = src[i] rounded to S; a thread moves V consecutive elements per grid-stride step (n a
// multiple of V: there is no tail).
template <int V, typename S>
__global__ void convert_kernel(const float* src, S* dst, int64_t n) {
  const int64_t step = V * int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = V * (int64_t(blockIdx.x) * blockDim.x + threadIdx.x); i < n; i += step) {
    float x[V];
    load_floats(src + i, x);
    store_floats(dst + i, x);
  }
}

}  // namespace

template <typename S>
void row_dot(const S* a, const S* b, float* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  const dim3 grid(unsigned((rows + tiles::kWarps - 1) / tiles::kWarps));
  const auto kernel = rows_vectorizable(cols, a, b) ? row_dot_kernel<kVectorWidth, S> : row_dot_kernel<1, S>;
  launch_kernel(kernel, grid, 0, stream, "row_dot_kernel", a, b, out, rows, cols);
}

template <typename S>
void convert_from_float(const float* src, S* dst, int64_t n, cudaStream_t stream) {
  const bool vector = rows_vectorizable(n, src, dst);
  const int64_t per_thread = vector ? kVectorWidth : 1, threads = (n + per_thread - 1) / per_thread;
  const dim3 grid(unsigned(std::min<int64_t>((threads + tiles::kThreads - 1) / tiles::kThreads, 65536)));
  launch_kernel(vector ? convert_kernel<kVectorWidth, S> : convert_kernel<1, S>, grid, 0, stream, "convert_kernel",
                src, dst, n);
}

template void row_dot<float>(const float*, const float*, float*, int64_t, int64_t, cudaStream_t);
template void row_dot<bf16>(const bf16*, const bf16*, float*, int64_t, int64_t, cudaStream_t);
template void convert_from_float<float>(const float*, float*, int64_t, cudaStream_t);
template void convert_from_float<bf16>(const float*, bf16*, int64_t, cudaStream_t);

}  // namespace detail

}  // namespace pathbench::cuda
