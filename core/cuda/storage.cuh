// Loads and stores between fp32 arithmetic and a tensor's storage type (float, or bf16 in bf16
// mode). Included by .cu files only.
#pragma once
#include <cuda_bf16.h>

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

}  // namespace pathbench::cuda
