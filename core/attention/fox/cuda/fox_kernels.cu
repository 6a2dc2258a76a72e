// FoX forget-gate ops on the GPU (fox_kernels.h): warp-level inclusive scans over time.
#include "core/attention/fox/cuda/fox_kernels.h"
#include "core/cuda/reduce.cuh"

namespace pathbench::cuda {

namespace {

constexpr int kSlicesPerBlock = 8;  // one warp per (batch, head) slice

__device__ __forceinline__ float log_sigmoid(float x) { return fminf(x, 0.0f) - log1pf(expf(-fabsf(x))); }

// Inclusive prefix sum over the 32 lanes.
__device__ __forceinline__ float warp_inclusive_scan(float v, int lane) {
  for (int offset = 1; offset < 32; offset <<= 1) {
    const float u = __shfl_up_sync(kFullWarp, v, offset);
    if (lane >= offset) v += u;
  }
  return v;
}

__global__ void forget_gate_forward_kernel(float* pre, const float* bias, float* cum, int64_t batch, int64_t length,
                                           int64_t heads) {
  const int64_t slice = int64_t(blockIdx.x) * kSlicesPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (slice >= batch * heads) return;
  const int64_t b = slice / heads, h = slice % heads;
  float carry = 0.0f;
  for (int64_t t0 = 0; t0 < length; t0 += 32) {
    const int64_t t = t0 + lane;
    float v = 0.0f;
    if (t < length) {
      float& p = pre[(b * length + t) * heads + h];
      p += bias[h];
      v = log_sigmoid(p);
    }
    v = warp_inclusive_scan(v, lane);
    if (t < length) cum[slice * length + t] = carry + v;
    carry += __shfl_sync(kFullWarp, v, 31);
  }
}

// Lane l of a step handles t = T − 1 − (t0 + l): the scan over lanes is a suffix sum over time.
__global__ void forget_gate_backward_kernel(const float* pre, const float* d_cum, float* d_pre, int64_t batch,
                                            int64_t length, int64_t heads) {
  const int64_t slice = int64_t(blockIdx.x) * kSlicesPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (slice >= batch * heads) return;
  const int64_t b = slice / heads, h = slice % heads;
  float carry = 0.0f;
  for (int64_t t0 = 0; t0 < length; t0 += 32) {
    const int64_t t = length - 1 - (t0 + lane);
    float v = t >= 0 ? d_cum[slice * length + t] : 0.0f;
    v = warp_inclusive_scan(v, lane);
    if (t >= 0) {
      const int64_t i = (b * length + t) * heads + h;
      d_pre[i] = (carry + v) / (1.0f + expf(pre[i]));  // d log σ(p)/dp = σ(−p)
    }
    carry += __shfl_sync(kFullWarp, v, 31);
  }
}

}  // namespace

void forget_gate_forward(float* pre, const float* bias, float* cum, int64_t batch, int64_t length, int64_t heads,
                         cudaStream_t stream) {
  forget_gate_forward_kernel<<<blocks_for(batch * heads, kSlicesPerBlock), 32 * kSlicesPerBlock, 0, stream>>>(
      pre, bias, cum, batch, length, heads);
  PATHBENCH_CUDA_CHECK_LAUNCH("forget_gate_forward_kernel");
}

void forget_gate_backward(const float* pre, const float* d_cum, float* d_pre, float* d_bias, float* scratch,
                          int64_t batch, int64_t length, int64_t heads, cudaStream_t stream) {
  forget_gate_backward_kernel<<<blocks_for(batch * heads, kSlicesPerBlock), 32 * kSlicesPerBlock, 0, stream>>>(
      pre, d_cum, d_pre, batch, length, heads);
  PATHBENCH_CUDA_CHECK_LAUNCH("forget_gate_backward_kernel");
  column_sums(MatrixEntries{d_pre, heads}, batch * length, heads, scratch, d_bias, stream);
}

}  // namespace pathbench::cuda
