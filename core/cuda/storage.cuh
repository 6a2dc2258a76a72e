// Loads and stores between fp32 arithmetic and a tensor's storage type (float, or bf16 in bf16
// mode). Included by .cu files only.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>
#include <type_traits>

namespace pathbench::cuda {

template <typename S>
__device__ __forceinline__ float load_float(const S* p) {
  if constexpr (std::is_same_v<S, __nv_bfloat16>)
    return __bfloat162float(*p);
  else
    return *p;
}

template <typename S>
__device__ __forceinline__ void store_float(S* p, float x) {
  if constexpr (std::is_same_v<S, __nv_bfloat16>)
    *p = __float2bfloat16_rn(x);
  else
    *p = x;
}

// Stores x at index i of f32 and/or of b16 (rounded as to_bf16 does), whichever is not null: an
// op's fp32 output and the bf16 copy that the next matrix product reads in bf16 mode.
__device__ __forceinline__ void store_float_or_bf16(float* f32, __nv_bfloat16* b16, int64_t i, float x) {
  if (f32) f32[i] = x;
  if (b16) store_float(b16 + i, x);
}

}  // namespace pathbench::cuda
