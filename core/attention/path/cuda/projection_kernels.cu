// PaTH's w/β stages on the GPU (projection_kernels.h): one warp per (token, head) for the
// convolution, SiLU and normalization (each lane's channels held in registers across its two
// passes); the convolution's backward in one pass over rows; elementwise kernels for β; fixed-order
// column sums for the convolution kernel's and β bias's gradients.
#include <cuda_bf16.h>

#include <stdexcept>
#include <string>

#include "core/attention/path/cuda/projection_kernels.h"
#include "core/attention/path/cuda/projection_math.cuh"
#include "core/cuda/reduce.cuh"
#include "core/cuda/storage.cuh"

namespace pathbench::cuda {

namespace {

using bf16 = __nv_bfloat16;

constexpr int kWarpsPerBlock = 8;

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
    const float acc = causal_conv(t, [&](int k) { return conv[ch * kConvWidth + k]; },
                                  [&](int k) { return y[(r - (kConvWidth - 1) + k) * hd + ch]; });
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
  for (int i = 0; i < E && lane + 32 * i < head_dim; ++i)
    dz[r * hd + h * head_dim + lane + 32 * i] = w_pre_gradient(zv[i], sv[i], gv[i], nrm, inv, proj);
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

// The convolution's backward in one pass over dz and y (each read once):
//   dy[t, ch] = Σ_k conv[ch, k] · dz[t + 2 − k, ch] over the positions inside the sequence (into dy
//   and/or dy16), and dconv[ch, k] = Σ_rows dz[r, ch] · y[r − 2 + k, ch] over the rows whose source
//   lies in the same sequence.
// Block (32 channels, 8 row groups) of row split blockIdx.y (kColumnSplits of them): thread (x, y)
// walks its group's consecutive rows in order with dz two rows ahead and y two rows behind in
// registers; the 8 groups' dconv sums combine in order into partial[split, k·channels + ch], so
// that finish_column_sums (group = channels) adds the splits in a fixed order into dconv's
// [channels, kConvWidth] layout.
constexpr int kConvGroups = 8;

__global__ void path_conv_backward_kernel(const float* y, const float* conv, const float* dz, float* dy, bf16* dy16,
                                          float* partial, int64_t rows, int64_t length, int64_t channels) {
  __shared__ float sums[kConvWidth][kConvGroups][33];
  const int64_t ch = int64_t(blockIdx.x) * 32 + threadIdx.x;
  const int64_t per_split = (rows + gridDim.y - 1) / gridDim.y, per_group = (per_split + kConvGroups - 1) / kConvGroups;
  const int64_t split_end = min(rows, (int64_t(blockIdx.y) + 1) * per_split);
  const int64_t begin = int64_t(blockIdx.y) * per_split + threadIdx.y * per_group;
  const int64_t end = min(split_end, begin + per_group);
  float acc[kConvWidth] = {};
  if (ch < channels && begin < end) {
    auto dz_at = [&](int64_t r) { return r < rows ? dz[r * channels + ch] : 0.0f; };
    auto y_at = [&](int64_t r) { return r >= 0 ? y[r * channels + ch] : 0.0f; };
    float c[kConvWidth];
    ConvWindow win;  // at row r: ahead[j] = dz[r + j], behind[k] = y[r − 2 + k]
    for (int k = 0; k < kConvWidth; ++k) {
      c[k] = conv[ch * kConvWidth + k];
      win.ahead[k] = dz_at(begin + k);
      win.behind[k] = k < kConvWidth - 1 ? y_at(begin - (kConvWidth - 1) + k) : 0.0f;
    }
    for (int64_t r = begin; r < end; ++r) {
      win.behind[kConvWidth - 1] = y[r * channels + ch];
      store_float_or_bf16(dy, dy16, r * channels + ch, win.step(r % length, length, c, acc));
      win.slide();
      win.ahead[kConvWidth - 1] = dz_at(r + kConvWidth);
    }
  }
  for (int k = 0; k < kConvWidth; ++k) sums[k][threadIdx.y][threadIdx.x] = acc[k];
  __syncthreads();
  if (threadIdx.y < kConvWidth && ch < channels) {
    const int k = int(threadIdx.y);
    float total = 0.0f;
    for (int g = 0; g < kConvGroups; ++g) total += sums[k][g][threadIdx.x];
    partial[int64_t(blockIdx.y) * kConvWidth * channels + k * channels + ch] = total;
  }
}

__global__ void path_beta_forward_kernel(float* pre, const float* bias, float* beta, int64_t batch, int64_t length,
                                         int64_t heads, float cap, bool clip) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= batch * length * heads) return;
  const int64_t r = i / heads, h = i % heads, b = r / length, t = r % length;
  const float p = pre[i] + bias[h];
  pre[i] = p;
  beta[(b * heads + h) * length + t] = beta_value(p, cap, clip);
}

__global__ void path_beta_backward_kernel(const float* pre, const float* dbeta, float* dpre, bf16* dpre16,
                                          int64_t batch, int64_t length, int64_t heads, float cap, bool clip) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= batch * length * heads) return;
  const int64_t r = i / heads, h = i % heads, b = r / length, t = r % length;
  store_float_or_bf16(dpre, dpre16, i, beta_pre_gradient(pre[i], dbeta[(b * heads + h) * length + t], cap, clip));
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
  const dim3 grid(unsigned((channels + 31) / 32), kColumnSplits), block(32, kConvGroups);
  path_conv_backward_kernel<<<grid, block, 0, stream>>>(y, conv, dz, dy, dy16, scratch, batch * length, length,
                                                        channels);
  PATHBENCH_CUDA_CHECK_LAUNCH("path_conv_backward_kernel");
  finish_column_sums(scratch, kColumnSplits, channels * kConvWidth, dconv, stream, channels);
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
