// Head split/merge kernels of the GPU model (core/ops/cuda/head_layout.h).
#include <cuda_bf16.h>

#include <algorithm>

#include "core/cuda/reduce.cuh"
#include "core/cuda/storage.cuh"
#include "core/cuda/vector_access.h"
#include "core/ops/cuda/head_layout.h"

namespace pathbench::cuda {

namespace {

using bf16 = __nv_bfloat16;

// Threads (x, y) of a block: y picks one of blockDim.y projection rows (b, t) from blockIdx.x ·
// blockDim.y, x a group of V consecutive columns of that row's H·D (blockIdx.y picks a slice of
// them when a row has more than blockDim.x groups), and blockIdx.z the part (its H·D columns of
// the row ↔ its [B, H, T, D] tensor, heads_size elements after the previous one); ToHeads picks
// the direction. V = kVectorWidth moves each group with one vector load and store, which needs
// the conditions of heads_permute_vectorizable (a group then stays inside one head and aligned);
// V = 1 is the scalar fallback for every other shape. The index arithmetic is 32-bit within a row
// (H·D and B·T are far below 2³¹), so no 64-bit division per element.
template <int V, typename In, typename Out, bool ToHeads>
__global__ void permute_heads_kernel(const In* src, Out* dst, int64_t stride, int64_t heads_size, int rows, int t,
                                     int h, int d) {
  const int col = V * int(blockIdx.y * blockDim.x + threadIdx.x);
  const int row = int(blockIdx.x * blockDim.y + threadIdx.y);
  if (col >= h * d || row >= rows) return;
  const int part = int(blockIdx.z);
  const int bi = row / t, ti = row % t, hi = col / d, di = col % d;
  const int64_t rows_index = int64_t(row) * stride + int64_t(part) * h * d + col;
  const int64_t heads_index = part * heads_size + ((int64_t(bi) * h + hi) * t + ti) * d + di;
  float x[V];
  if constexpr (ToHeads) {
    load_floats(src + rows_index, x);
    store_floats(dst + heads_index, x);
  } else {
    load_floats(src + heads_index, x);
    store_floats(dst + rows_index, x);
  }
}

// Threads per block of permute_heads_kernel: a row's groups rounded up to whole warps (at most
// kPermuteThreads), and as many rows per block as fill kPermuteThreads (8 rows of 32 threads at
// H·D = 128 with V = 4), so that small rows still make blocks of a useful size.
constexpr int kPermuteThreads = 256;

// Launches permute_heads_kernel with V elements per thread.
template <int V, typename In, typename Out, bool ToHeads>
void launch_permute_heads(const In* src, Out* dst, int64_t stride, int64_t b, int64_t t, int64_t h, int64_t d,
                          int parts, cudaStream_t stream) {
  const int64_t groups = h * d / V, rows = b * t;
  const int64_t threads_x = std::min<int64_t>(kPermuteThreads, (groups + 31) / 32 * 32);
  const int64_t threads_y = kPermuteThreads / threads_x;
  const dim3 block{unsigned(threads_x), unsigned(threads_y)};
  const dim3 grid(unsigned((rows + threads_y - 1) / threads_y), unsigned((groups + threads_x - 1) / threads_x),
                  unsigned(parts));
  permute_heads_kernel<V, In, Out, ToHeads>
      <<<grid, block, 0, stream>>>(src, dst, stride, rows * h * d, int(rows), int(t), int(h), int(d));
  check_cuda_call(cudaGetLastError(),
                  ToHeads ? "launch of permute_heads_kernel (split)" : "launch of permute_heads_kernel (merge)",
                  __FILE__, __LINE__);
}

// Moves kVectorWidth elements per thread where the shape and pointers allow, else one.
template <typename In, typename Out, bool ToHeads>
void permute_heads(const In* src, Out* dst, int64_t stride, int64_t b, int64_t t, int64_t h, int64_t d, int parts,
                   cudaStream_t stream) {
  if (b * t * h * d * parts == 0) return;
  if (heads_permute_vectorizable(src, dst, stride, d))
    launch_permute_heads<kVectorWidth, In, Out, ToHeads>(src, dst, stride, b, t, h, d, parts, stream);
  else
    launch_permute_heads<1, In, Out, ToHeads>(src, dst, stride, b, t, h, d, parts, stream);
}

}  // namespace

template <typename In, typename Out>
void split_heads(const In* src, int64_t src_stride, Out* dst, int64_t b, int64_t t, int64_t h, int64_t d,
                 cudaStream_t stream, int parts) {
  permute_heads<In, Out, true>(src, dst, src_stride, b, t, h, d, parts, stream);
}

template <typename In, typename Out>
void merge_heads(const In* src, Out* dst, int64_t dst_stride, int64_t b, int64_t t, int64_t h, int64_t d,
                 cudaStream_t stream, int parts) {
  permute_heads<In, Out, false>(src, dst, dst_stride, b, t, h, d, parts, stream);
}

template void split_heads<float, float>(const float*, int64_t, float*, int64_t, int64_t, int64_t, int64_t, cudaStream_t,
                                        int);
template void split_heads<float, bf16>(const float*, int64_t, bf16*, int64_t, int64_t, int64_t, int64_t, cudaStream_t,
                                       int);
template void split_heads<bf16, bf16>(const bf16*, int64_t, bf16*, int64_t, int64_t, int64_t, int64_t, cudaStream_t,
                                      int);
template void merge_heads<float, float>(const float*, float*, int64_t, int64_t, int64_t, int64_t, int64_t, cudaStream_t,
                                        int);
template void merge_heads<bf16, bf16>(const bf16*, bf16*, int64_t, int64_t, int64_t, int64_t, int64_t, cudaStream_t,
                                      int);
template void merge_heads<float, bf16>(const float*, bf16*, int64_t, int64_t, int64_t, int64_t, int64_t, cudaStream_t,
                                       int);
template void merge_heads<bf16, float>(const bf16*, float*, int64_t, int64_t, int64_t, int64_t, int64_t, cudaStream_t,
                                       int);

}  // namespace pathbench::cuda
