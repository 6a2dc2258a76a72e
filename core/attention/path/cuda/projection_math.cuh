// The scalar steps of PaTH's w/β projection on the GPU, shared by the staged kernels
// (projection_kernels.cu) and the fused ones (projection_fused.cu) so both compute each value the
// same way: the causal convolution, its input gradient and its backward's row step, the
// normalization's and SiLU's backward, and β with its clip. Included by .cu files only.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace pathbench::cuda {

constexpr int kConvWidth = 3;       // kPathConvWidth of path_projection.h
constexpr float kNormEps = 1e-12f;  // as path_projection.cpp

// σ through the hardware's exponential and reciprocal (relative error about 1e-7 over the range
// the projections meet; 0 and 1 at the ends).
__device__ __forceinline__ float sigmoid(float x) { return __fdividef(1.0f, 1.0f + __expf(-x)); }

// z at position t of a channel: Σ_k tap(k) · y_at(k), y_at(k) = y at position t − 2 + k, over the
// taps whose source lies inside the sequence.
template <class TapAt, class YAt>
__device__ __forceinline__ float causal_conv(int64_t t, TapAt tap, YAt y_at) {
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < kConvWidth; ++k)
    if (t - (kConvWidth - 1) + k >= 0) acc += tap(k) * y_at(k);
  return acc;
}

// dy at position t of a channel (sequence length T): Σ_k tap(k) · dz_at(k), dz_at(k) = dz at
// position t + 2 − k, over the positions inside the sequence.
template <class TapAt, class DzAt>
__device__ __forceinline__ float causal_conv_input_gradient(int64_t t, int64_t length, TapAt tap, DzAt dz_at) {
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < kConvWidth; ++k)
    if (t + (kConvWidth - 1) - k < length) acc += tap(k) * dz_at(k);
  return acc;
}

// The convolution's backward down one channel's rows, a row at a time, over a window of registers:
// ahead[i] = dz at position t + i, behind[k] = y at position t − 2 + k. step() returns dy at t
// and adds dz·y into sums[k] over the taps whose source lies inside the sequence; slide() moves the
// window one row on, after which the caller loads the new ahead[2] and behind[2].
struct ConvWindow {
  float ahead[kConvWidth], behind[kConvWidth];

  __device__ __forceinline__ float step(int64_t t, int64_t length, const float (&taps)[kConvWidth],
                                        float (&sums)[kConvWidth]) const {
#pragma unroll
    for (int k = 0; k < kConvWidth; ++k)
      if (t - (kConvWidth - 1) + k >= 0) sums[k] += ahead[0] * behind[k];
    return causal_conv_input_gradient(t, length, [&](int k) { return taps[k]; },
                                      [&](int k) { return ahead[kConvWidth - 1 - k]; });
  }
  __device__ __forceinline__ void slide() {
#pragma unroll
    for (int k = 0; k + 1 < kConvWidth; ++k) ahead[k] = ahead[k + 1], behind[k] = behind[k + 1];
  }
};

// w = a / max(‖a‖, ε) with a = silu(z) = z·s, s = σ(z): dz from the channel's dw (g), inv = 1 / max(‖a‖, ε)
// and proj = Σ_e w_e·g_e over the head: da = (g − proj·w)/‖a‖, or g/ε where a vanishes.
__device__ __forceinline__ float w_pre_gradient(float z, float s, float g, float norm, float inv, float proj) {
  const float w = z * s * inv;
  const float da = (norm > kNormEps ? g - proj * w : g) * inv;
  return da * s * (1.0f + z * (1.0f - s));
}

// β = 2σ(pre), at most cap when clip.
__device__ __forceinline__ float beta_value(float pre, float cap, bool clip) {
  const float value = 2.0f * sigmoid(pre);
  return clip ? fminf(value, cap) : value;
}

// dpre = dβ · 2σ(1 − σ), 0 where β is clipped.
__device__ __forceinline__ float beta_pre_gradient(float pre, float dbeta, float cap, bool clip) {
  const float s = sigmoid(pre);
  return clip && 2.0f * s > cap ? 0.0f : dbeta * 2.0f * s * (1.0f - s);
}

}  // namespace pathbench::cuda
