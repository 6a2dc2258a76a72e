// Head split/merge kernels of the GPU model (core/ops/cuda/head_layout.h).
#include <cuda_bf16.h>

#include <algorithm>

#include "core/cuda/reduce.cuh"
#include "core/cuda/storage.cuh"
#include "core/ops/cuda/head_layout.h"

namespace pathbench::cuda {

namespace {

using bf16 = __nv_bfloat16;

// One block row per projection row (b, t) = blockIdx.x, threads over its H·D columns (blockIdx.y
// picks a slice of them when H·D exceeds the block), blockIdx.z the part (its H·D columns of the
// row ↔ its [B, H, T, D] tensor, heads_size elements after the previous one); ToHeads picks the
// direction. The index arithmetic is 32-bit within a row (H·D and T are far below 2³¹), so no
// 64-bit division per element.
template <typename In, typename Out, bool ToHeads>
__global__ void permute_heads_kernel(const In* src, Out* dst, int64_t stride, int64_t heads_size, int t, int h,
                                     int d) {
  const int col = int(blockIdx.y) * blockDim.x + threadIdx.x;
  if (col >= h * d) return;
  const int row = int(blockIdx.x), part = int(blockIdx.z);
  const int bi = row / t, ti = row % t, hi = col / d, di = col % d;
  const int64_t rows_index = int64_t(row) * stride + int64_t(part) * h * d + col;
  const int64_t heads_index = part * heads_size + ((int64_t(bi) * h + hi) * t + ti) * d + di;
  if constexpr (ToHeads)
    store_float(dst + heads_index, load_float(src + rows_index));
  else
    store_float(dst + rows_index, load_float(src + heads_index));
}

// Launches permute_heads_kernel: one block row per (b, t), up to 256 threads across H·D, one grid
// layer per part.
template <typename In, typename Out, bool ToHeads>
void permute_heads(const In* src, Out* dst, int64_t stride, int64_t b, int64_t t, int64_t h, int64_t d, int parts,
                   cudaStream_t stream) {
  if (b * t * h * d * parts == 0) return;
  const int64_t columns = h * d, threads = std::min<int64_t>(256, (columns + 31) / 32 * 32);
  const dim3 grid(unsigned(b * t), unsigned((columns + threads - 1) / threads), unsigned(parts));
  permute_heads_kernel<In, Out, ToHeads>
      <<<grid, unsigned(threads), 0, stream>>>(src, dst, stride, b * t * h * d, int(t), int(h), int(d));
  check_cuda_call(cudaGetLastError(),
                  ToHeads ? "launch of permute_heads_kernel (split)" : "launch of permute_heads_kernel (merge)",
                  __FILE__, __LINE__);
}

}  // namespace

template <typename Out>
void split_heads(const float* src, int64_t src_stride, Out* dst, int64_t b, int64_t t, int64_t h, int64_t d,
                 cudaStream_t stream, int parts) {
  permute_heads<float, Out, true>(src, dst, src_stride, b, t, h, d, parts, stream);
}

template <typename In, typename Out>
void merge_heads(const In* src, Out* dst, int64_t dst_stride, int64_t b, int64_t t, int64_t h, int64_t d,
                 cudaStream_t stream, int parts) {
  permute_heads<In, Out, false>(src, dst, dst_stride, b, t, h, d, parts, stream);
}

template void split_heads<float>(const float*, int64_t, float*, int64_t, int64_t, int64_t, int64_t, cudaStream_t, int);
template void split_heads<bf16>(const float*, int64_t, bf16*, int64_t, int64_t, int64_t, int64_t, cudaStream_t, int);
template void merge_heads<float, float>(const float*, float*, int64_t, int64_t, int64_t, int64_t, int64_t, cudaStream_t,
                                        int);
template void merge_heads<bf16, bf16>(const bf16*, bf16*, int64_t, int64_t, int64_t, int64_t, int64_t, cudaStream_t,
                                      int);
template void merge_heads<float, bf16>(const float*, bf16*, int64_t, int64_t, int64_t, int64_t, int64_t, cudaStream_t,
                                       int);
template void merge_heads<bf16, float>(const bf16*, float*, int64_t, int64_t, int64_t, int64_t, int64_t, cudaStream_t,
                                       int);

}  // namespace pathbench::cuda
