// Head split/merge kernels of the GPU model (core/ops/cuda/head_layout.h).
#include <cuda_bf16.h>

#include "core/cuda/reduce.cuh"
#include "core/cuda/storage.cuh"
#include "core/ops/cuda/head_layout.h"

namespace pathbench::cuda {

namespace {

using bf16 = __nv_bfloat16;

// One thread per element of the [B, H, T, D] side; ToHeads picks the direction.
template <typename In, typename Out, bool ToHeads>
__global__ void permute_heads_kernel(const In* src, Out* dst, int64_t stride, int64_t b, int64_t t, int64_t h,
                                     int64_t d) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= b * h * t * d) return;
  const int64_t di = i % d, ti = (i / d) % t, hi = (i / (d * t)) % h, bi = i / (d * t * h);
  const int64_t rows_index = (bi * t + ti) * stride + hi * d + di;
  if constexpr (ToHeads)
    store_float(dst + i, load_float(src + rows_index));
  else
    store_float(dst + rows_index, load_float(src + i));
}

}  // namespace

template <typename Out>
void split_heads(const float* src, int64_t src_stride, Out* dst, int64_t b, int64_t t, int64_t h, int64_t d,
                 cudaStream_t stream) {
  permute_heads_kernel<float, Out, true><<<blocks_for(b * t * h * d), 256, 0, stream>>>(src, dst, src_stride, b, t, h, d);
  PATHBENCH_CUDA_CHECK_LAUNCH("permute_heads_kernel (split)");
}

template <typename In, typename Out>
void merge_heads(const In* src, Out* dst, int64_t dst_stride, int64_t b, int64_t t, int64_t h, int64_t d,
                 cudaStream_t stream) {
  permute_heads_kernel<In, Out, false><<<blocks_for(b * t * h * d), 256, 0, stream>>>(src, dst, dst_stride, b, t, h, d);
  PATHBENCH_CUDA_CHECK_LAUNCH("permute_heads_kernel (merge)");
}

template void split_heads<float>(const float*, int64_t, float*, int64_t, int64_t, int64_t, int64_t, cudaStream_t);
template void split_heads<bf16>(const float*, int64_t, bf16*, int64_t, int64_t, int64_t, int64_t, cudaStream_t);
template void merge_heads<float, float>(const float*, float*, int64_t, int64_t, int64_t, int64_t, int64_t, cudaStream_t);
template void merge_heads<bf16, bf16>(const bf16*, bf16*, int64_t, int64_t, int64_t, int64_t, int64_t, cudaStream_t);
template void merge_heads<float, bf16>(const float*, bf16*, int64_t, int64_t, int64_t, int64_t, int64_t, cudaStream_t);
template void merge_heads<bf16, float>(const bf16*, float*, int64_t, int64_t, int64_t, int64_t, int64_t, cudaStream_t);

}  // namespace pathbench::cuda
