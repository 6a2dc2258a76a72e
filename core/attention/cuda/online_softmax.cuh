// Online softmax over blocks of 64 keys for the warp's 16 query rows (FlashAttention's running max
// and sum), shared by the softmax and PaTH forward kernels. Logits arrive in log2 units (already
// multiplied by log2(e)), masked entries as −inf.
#pragma once
#include "core/attention/cuda/tiles.cuh"

namespace pathbench::cuda::tiles {

struct OnlineSoftmax {
  float m[2] = {-INFINITY, -INFINITY};  // running max of rows g and g+8 (log2 units)
  float l[2] = {0.f, 0.f};              // this thread's part of the running sum of 2^(x − m)

  // Turns x (16 × 64 logits) into unnormalized probabilities and rescales the output rows o.
  template <int NTD>
  __device__ __forceinline__ void update(float (&x)[8][4], float (&o)[NTD][4]) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx = m[r];
#pragma unroll
      for (int n = 0; n < 8; ++n) mx = fmaxf(mx, fmaxf(x[n][2 * r], x[n][2 * r + 1]));
      mx = quad_max(mx);
      const float base = mx == -INFINITY ? 0.f : mx;  // a fully masked row so far stays at zero
      const float corr = exp2_ftz(m[r] - base);
      m[r] = mx;
      float sum = 0.f;
#pragma unroll
      for (int n = 0; n < 8; ++n) {
        x[n][2 * r] = exp2_ftz(x[n][2 * r] - base);
        x[n][2 * r + 1] = exp2_ftz(x[n][2 * r + 1] - base);
        sum += x[n][2 * r] + x[n][2 * r + 1];
      }
      l[r] = l[r] * corr + sum;
#pragma unroll
      for (int n = 0; n < NTD; ++n) o[n][2 * r] *= corr, o[n][2 * r + 1] *= corr;
    }
  }

  // Normalizes o and returns each row's natural-log log-sum-exp in lse.
  template <int NTD>
  __device__ __forceinline__ void finish(float (&o)[NTD][4], float (&lse)[2]) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float total = quad_sum(l[r]);
      const float inv = 1.f / total;
#pragma unroll
      for (int n = 0; n < NTD; ++n) o[n][2 * r] *= inv, o[n][2 * r + 1] *= inv;
      lse[r] = (m[r] + log2f(total)) * kLn2;
    }
  }
};

}  // namespace pathbench::cuda::tiles
