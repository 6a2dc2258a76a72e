// Loads and stores between fp32 arithmetic and a tensor's storage type (float, or bf16 in bf16
// mode): one element, or a group of kVectorWidth in one vector access. Included by .cu files only.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda/vector_access.h"

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

// Four consecutive bf16 as two pairs; moved to and from memory as one uint2 (a single 8-byte access:
// copying the struct itself would take two 4-byte ones).
struct alignas(8) Bf16Quad {
  __nv_bfloat162 lo, hi;
};

// x[k] = p[k] for k < V: V = 1 is load_float, V = kVectorWidth one vector load (float4, or four bf16
// in 8 bytes; p aligned to the group, see vector_access.h). Values are the same as V scalar loads.
template <int V, typename S>
__device__ __forceinline__ void load_floats(const S* p, float (&x)[V]) {
  static_assert(V == 1 || V == kVectorWidth);
  if constexpr (V == 1) {
    x[0] = load_float(p);
  } else if constexpr (std::is_same_v<S, __nv_bfloat16>) {
    const uint2 raw = *reinterpret_cast<const uint2*>(p);
    const Bf16Quad& q = reinterpret_cast<const Bf16Quad&>(raw);
    const float2 lo = __bfloat1622float2(q.lo), hi = __bfloat1622float2(q.hi);
    x[0] = lo.x;
    x[1] = lo.y;
    x[2] = hi.x;
    x[3] = hi.y;
  } else {
    const float4 v = *reinterpret_cast<const float4*>(p);
    x[0] = v.x;
    x[1] = v.y;
    x[2] = v.z;
    x[3] = v.w;
  }
}

// p[k] = x[k] for k < V, as load_floats; bf16 rounds each value to nearest even as store_float does.
template <int V, typename S>
__device__ __forceinline__ void store_floats(S* p, const float (&x)[V]) {
  static_assert(V == 1 || V == kVectorWidth);
  if constexpr (V == 1) {
    store_float(p, x[0]);
  } else if constexpr (std::is_same_v<S, __nv_bfloat16>) {
    const Bf16Quad q{__floats2bfloat162_rn(x[0], x[1]), __floats2bfloat162_rn(x[2], x[3])};
    *reinterpret_cast<uint2*>(p) = reinterpret_cast<const uint2&>(q);
  } else {
    *reinterpret_cast<float4*>(p) = make_float4(x[0], x[1], x[2], x[3]);
  }
}

// store_float_or_bf16 of x[0..V) at indices i..i+V−1 (for V > 1, f32 + i and b16 + i aligned to a group).
template <int V>
__device__ __forceinline__ void store_floats_or_bf16(float* f32, __nv_bfloat16* b16, int64_t i, const float (&x)[V]) {
  if (f32) store_floats(f32 + i, x);
  if (b16) store_floats(b16 + i, x);
}

}  // namespace pathbench::cuda
