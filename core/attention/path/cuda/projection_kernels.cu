// PaTH's w/β stages on the GPU (projection_kernels.h): one warp per (token, head) for the
// convolution, SiLU and normalization (each lane's channels held in registers across its two
// passes); elementwise kernels for β; fixed-order column sums for the convolution kernel's and β
// bias's gradients.
#include <cuda_bf16.h>

#include <stdexcept>
#include <string>

#include "core/attention/path/cuda/projection_kernels.h"
#include "core/cuda/reduce.cuh"
#include "core/cuda/storage.cuh"

namespace pathbench::cuda {

namespace {

using bf16 = __nv_bfloat16;

constexpr int kConvWidth = 3;      // kPathConvWidth of path_projection.h
constexpr float kNormEps = 1e-12f;  // as path_projection.cpp
constexpr int kWarpsPerBlock = 8;

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// Channels per lane of the w kernels: lane l holds the head's channels l, l + 32, … (E = ⌈D/32⌉ of
// them, at most kMaxChannelsPerLane: D ≤ 128) in registers between the warp's reduction and its
// second pass, so nothing is read or computed twice.
constexpr int kMaxChannelsPerLane = 4;

// Warp (row r = b·T + t, head h).
template <int E, typename S>
__global__ void path_w_forward_kernel(const float* y, const float* conv, float* z, float* norm, S* w, int64_t batch,
                                      int64_t length, int64_t heads, int64_t head_dim) {
  const int64_t item = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (item >= batch * length * heads) return;
  const int64_t r = item / heads, h = item % heads, b = r / length, t = r % length, hd = heads * head_dim;
  float a[E];  // silu(z) of the lane's channels
  float ss = 0.0f;
  for (int i = 0; i < E; ++i) {
    const int64_t e = lane + 32 * i;
    if (e >= head_dim) break;
    const int64_t ch = h * head_dim + e;
    float acc = 0.0f;
    for (int k = 0; k < kConvWidth; ++k)
      if (t - (kConvWidth - 1) + k >= 0) acc += conv[ch * kConvWidth + k] * y[(r - (kConvWidth - 1) + k) * hd + ch];
    if (z) z[r * hd + ch] = acc;
    a[i] = acc * sigmoid(acc);
    ss += a[i] * a[i];
  }
  const float nrm = sqrtf(warp_sum(ss));
  if (norm && lane == 0) norm[item] = nrm;
  const float inv = 1.0f / fmaxf(nrm, kNormEps);
  S* wr = w + ((b * heads + h) * length + t) * head_dim;
  for (int i = 0; i < E && lane + 32 * i < head_dim; ++i) store_float(wr + lane + 32 * i, a[i] * inv);
}

// w = a/‖a‖: da = (dw − w (w·dw)) / ‖a‖; dz = da · silu'(z).
template <int E, typename S>
__global__ void path_w_backward_kernel(const float* z, const float* norm, const S* dw, float* dz, int64_t batch,
                                       int64_t length, int64_t heads, int64_t head_dim) {
  const int64_t item = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (item >= batch * length * heads) return;
  const int64_t r = item / heads, h = item % heads, b = r / length, t = r % length, hd = heads * head_dim;
  const float nrm = norm[item], inv = 1.0f / fmaxf(nrm, kNormEps);
  const S* g = dw + ((b * heads + h) * length + t) * head_dim;
  const float* zr = z + r * hd + h * head_dim;
  float zv[E], sv[E], gv[E];  // the lane's channels: z, sigmoid(z), dw
  float proj = 0.0f;
  for (int i = 0; i < E; ++i) {
    const int64_t e = lane + 32 * i;
    if (e >= head_dim) break;
    zv[i] = zr[e];
    sv[i] = sigmoid(zv[i]);
    gv[i] = load_float(g + e);
    proj += zv[i] * sv[i] * inv * gv[i];
  }
  proj = warp_sum(proj);
  for (int i = 0; i < E && lane + 32 * i < head_dim; ++i) {
    const float we = zv[i] * sv[i] * inv;
    const float da = nrm > kNormEps ? (gv[i] - proj * we) / nrm : gv[i] / kNormEps;
    dz[r * hd + h * head_dim + lane + 32 * i] = da * sv[i] * (1.0f + zv[i] * (1.0f - sv[i]));
  }
}

// Calls launch.template operator()<E>() with the channels per lane that head_dim needs.
template <class Launch>
void with_channels_per_lane(int64_t head_dim, const Launch& launch) {
  if (head_dim > 32 * kMaxChannelsPerLane)
    throw std::logic_error("PaTH w kernels: head dim " + std::to_string(head_dim) + " over 128");
  if (head_dim <= 32)
    launch.template operator()<1>();
  else if (head_dim <= 64)
    launch.template operator()<2>();
  else
    launch.template operator()<4>();
}

// dy[t, ch] = Σ_k conv[ch, k] · dz[t + 2 − k, ch] over the positions inside the sequence, into dy
// and/or dy16.
__global__ void path_conv_input_grad_kernel(const float* conv, const float* dz, float* dy, bf16* dy16, int64_t batch,
                                            int64_t length, int64_t channels) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= batch * length * channels) return;
  const int64_t r = i / channels, ch = i % channels, t = r % length;
  float acc = 0.0f;
  for (int k = 0; k < kConvWidth; ++k)
    if (t + (kConvWidth - 1) - k < length) acc += conv[ch * kConvWidth + k] * dz[(r + (kConvWidth - 1) - k) * channels + ch];
  store_float_or_bf16(dy, dy16, i, acc);
}

// dconv[ch, k] = Σ_rows dz[r, ch] · y[r − 2 + k, ch] (rows whose source lies in the same sequence),
// as column col = k·channels + ch, so that neighbouring columns read neighbouring channels (the sums
// land in dconv's [channels, kConvWidth] order through column_sums' group).
struct ConvKernelGradient {
  const float *y, *dz;
  int64_t length, channels;
  __device__ float operator()(int64_t r, int64_t col) const {
    const int64_t ch = col % channels, k = col / channels;
    if (r % length - (kConvWidth - 1) + k < 0) return 0.0f;
    return dz[r * channels + ch] * y[(r - (kConvWidth - 1) + k) * channels + ch];
  }
};

__global__ void path_beta_forward_kernel(float* pre, const float* bias, float* beta, int64_t batch, int64_t length,
                                         int64_t heads, float cap, bool clip) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= batch * length * heads) return;
  const int64_t r = i / heads, h = i % heads, b = r / length, t = r % length;
  const float p = pre[i] + bias[h];
  pre[i] = p;
  const float value = 2.0f * sigmoid(p);
  beta[(b * heads + h) * length + t] = clip ? fminf(value, cap) : value;
}

__global__ void path_beta_backward_kernel(const float* pre, const float* dbeta, float* dpre, bf16* dpre16,
                                          int64_t batch, int64_t length, int64_t heads, float cap, bool clip) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= batch * length * heads) return;
  const int64_t r = i / heads, h = i % heads, b = r / length, t = r % length;
  const float s = sigmoid(pre[i]);
  store_float_or_bf16(dpre, dpre16, i,
                      clip && 2.0f * s > cap ? 0.0f : dbeta[(b * heads + h) * length + t] * 2.0f * s * (1.0f - s));
}

}  // namespace

template <typename S>
void path_w_forward(const float* y, const float* conv, float* z, float* norm, S* w, int64_t batch, int64_t length,
                    int64_t heads, int64_t head_dim, cudaStream_t stream) {
  const unsigned blocks = blocks_for(batch * length * heads, kWarpsPerBlock);
  with_channels_per_lane(head_dim, [&]<int E>() {
    path_w_forward_kernel<E, S><<<blocks, 32 * kWarpsPerBlock, 0, stream>>>(y, conv, z, norm, w, batch, length, heads,
                                                                           head_dim);
  });
  PATHBENCH_CUDA_CHECK_LAUNCH("path_w_forward_kernel");
}

template <typename S>
void path_w_backward(const float* z, const float* norm, const S* dw, float* dz, int64_t batch, int64_t length,
                     int64_t heads, int64_t head_dim, cudaStream_t stream) {
  const unsigned blocks = blocks_for(batch * length * heads, kWarpsPerBlock);
  with_channels_per_lane(head_dim, [&]<int E>() {
    path_w_backward_kernel<E, S><<<blocks, 32 * kWarpsPerBlock, 0, stream>>>(z, norm, dw, dz, batch, length, heads,
                                                                            head_dim);
  });
  PATHBENCH_CUDA_CHECK_LAUNCH("path_w_backward_kernel");
}

void path_conv_backward(const float* y, const float* conv, const float* dz, float* dy, bf16* dy16, float* dconv,
                        float* scratch, int64_t batch, int64_t length, int64_t channels, cudaStream_t stream) {
  path_conv_input_grad_kernel<<<blocks_for(batch * length * channels), 256, 0, stream>>>(conv, dz, dy, dy16, batch,
                                                                                         length, channels);
  PATHBENCH_CUDA_CHECK_LAUNCH("path_conv_input_grad_kernel");
  column_sums(ConvKernelGradient{y, dz, length, channels}, batch * length, channels * kConvWidth, scratch, dconv,
              stream, channels);
}

void path_beta_forward(float* pre, const float* bias, float* beta, int64_t batch, int64_t length, int64_t heads,
                       double clip_eps, cudaStream_t stream) {
  path_beta_forward_kernel<<<blocks_for(batch * length * heads), 256, 0, stream>>>(
      pre, bias, beta, batch, length, heads, float(2.0 - clip_eps), clip_eps > 0);
  PATHBENCH_CUDA_CHECK_LAUNCH("path_beta_forward_kernel");
}

void path_beta_backward(const float* pre, const float* dbeta, float* dpre, bf16* dpre16, float* dbias, float* scratch,
                        int64_t batch, int64_t length, int64_t heads, double clip_eps, cudaStream_t stream) {
  path_beta_backward_kernel<<<blocks_for(batch * length * heads), 256, 0, stream>>>(
      pre, dbeta, dpre, dpre16, batch, length, heads, float(2.0 - clip_eps), clip_eps > 0);
  PATHBENCH_CUDA_CHECK_LAUNCH("path_beta_backward_kernel");
  column_sums(MatrixEntries{dpre, heads}, batch * length, heads, scratch, dbias, stream);
}

template void path_w_forward<float>(const float*, const float*, float*, float*, float*, int64_t, int64_t, int64_t,
                                    int64_t, cudaStream_t);
template void path_w_forward<bf16>(const float*, const float*, float*, float*, bf16*, int64_t, int64_t, int64_t,
                                   int64_t, cudaStream_t);
template void path_w_backward<float>(const float*, const float*, const float*, float*, int64_t, int64_t, int64_t,
                                     int64_t, cudaStream_t);
template void path_w_backward<bf16>(const float*, const float*, const bf16*, float*, int64_t, int64_t, int64_t,
                                    int64_t, cudaStream_t);

}  // namespace pathbench::cuda
