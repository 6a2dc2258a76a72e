// CUDA twins of fox.h's gate ops: the FoX forget gate's bias, log-sigmoid and cumulative sum over
// time (forward), and the reverse cumulative sum and log-sigmoid derivative (backward). The
// projection x·Wᵀ itself runs through cuda::linear_* (fox_encoding.cpp). One warp scans each (batch,
// head) slice in a fixed order. Device pointers; work queued on `stream`. Implemented in fox_kernels.cu.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace pathbench::cuda {

// pre: [B, T, H] holds x·Wᵀ on entry and x·Wᵀ + bias afterwards (kept for backward);
// cum: [B, H, T] = Σ_{s≤t} log σ(pre_s).
void forget_gate_forward(float* pre, const float* bias, float* cum, int64_t batch, int64_t length, int64_t heads,
                         cudaStream_t stream);

// d_pre [B, T, H] = σ(−pre_t) · Σ_{s≥t} d_cum_s (overwritten); d_bias [H] += Σ d_pre over tokens.
// scratch: kColumnScratchPerColumn (ops.h) · H floats.
void forget_gate_backward(const float* pre, const float* d_cum, float* d_pre, float* d_bias, float* scratch,
                          int64_t batch, int64_t length, int64_t heads, cudaStream_t stream);

}  // namespace pathbench::cuda
