// PaTH's w/β parameterization: low-rank projection, causal depthwise short convolution, SiLU,
// per-head L2 normalization; β = 2·σ(·) with an optional clip. Forward and backward.
#include "core/attention/path/path_projection.h"

#include <algorithm>
#include <cmath>

#include "core/ops/head_layout.h"
#include "core/params/init.h"
#include "core/ops/activations.h"
#include "core/ops/linear.h"
#include "core/ops/scalar_functions.h"

namespace pathbench {

namespace {

// w = a / max(‖a‖, ε): exactly unit unless a vanishes.
constexpr double kNormEps = 1e-12;

// The convolution weights tap-major: taps[k·C + ch] = conv[ch, k], so the per-row loops below run
// over contiguous channels.
template <typename T>
std::vector<T> conv_taps(const T* conv, int64_t channels) {
  std::vector<T> taps(kPathConvWidth * channels);
  for (int64_t ch = 0; ch < channels; ++ch)
    for (int64_t k = 0; k < kPathConvWidth; ++k) taps[k * channels + ch] = conv[ch * kPathConvWidth + k];
  return taps;
}

// Causal depthwise convolution over time: z[b, t, ch] = Σ_k conv[ch, k]·y[b, t − (K−1) + k, ch].
template <typename T>
void causal_conv_forward(const T* y, const T* conv, T* z, int64_t batch, int64_t length, int64_t channels) {
  const std::vector<T> taps = conv_taps(conv, channels);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < length; ++t) {
      T* z_row = z + (b * length + t) * channels;
      std::fill(z_row, z_row + channels, T(0));
      for (int64_t k = 0; k < kPathConvWidth; ++k) {
        const int64_t src = t - (kPathConvWidth - 1) + k;
        if (src < 0) continue;
        const T *y_row = y + (b * length + src) * channels, *tap = taps.data() + k * channels;
        for (int64_t ch = 0; ch < channels; ++ch) z_row[ch] += tap[ch] * y_row[ch];
      }
    }
}

// Rows (tokens) per block of the conv weight gradient's partial sums.
constexpr int64_t kConvGradBlock = 64;

// dy (overwritten) and dconv (accumulated) from dz. The weight gradient is summed per fixed block of
// kConvGradBlock tokens, then the blocks are added in order: the same result for any thread count.
template <typename T>
void causal_conv_backward(const T* y, const T* conv, const T* dz, T* dy, T* dconv, int64_t batch, int64_t length,
                          int64_t channels) {
  constexpr int64_t kw = kPathConvWidth;
  const std::vector<T> taps = conv_taps(conv, channels);
  const int64_t rows = batch * length, blocks = (rows + kConvGradBlock - 1) / kConvGradBlock;
  std::vector<T> partial(size_t(blocks * kw * channels), T(0));  // [blocks, K, C], tap-major per block
#pragma omp parallel for schedule(static)
  for (int64_t block = 0; block < blocks; ++block) {
    T* part = partial.data() + block * kw * channels;
    for (int64_t row = block * kConvGradBlock; row < std::min(rows, (block + 1) * kConvGradBlock); ++row) {
      const int64_t b = row / length, t = row % length;
      const T* dz_row = dz + row * channels;
      T* dy_row = dy + row * channels;
      std::fill(dy_row, dy_row + channels, T(0));
      for (int64_t k = 0; k < kw; ++k) {
        const T* tap = taps.data() + k * channels;
        T* dtap = part + k * channels;
        // z[t'] reads y[t] through tap k when t' = t + (K − 1) − k
        const int64_t dst = t + (kw - 1) - k;
        if (dst < length) {
          const T* dz_dst = dz + (b * length + dst) * channels;
          for (int64_t ch = 0; ch < channels; ++ch) dy_row[ch] += tap[ch] * dz_dst[ch];
        }
        const int64_t src = t - (kw - 1) + k;
        if (src >= 0) {
          const T* y_src = y + (b * length + src) * channels;
          for (int64_t ch = 0; ch < channels; ++ch) dtap[ch] += dz_row[ch] * y_src[ch];
        }
      }
    }
  }
  for (int64_t block = 0; block < blocks; ++block) {
    const T* part = partial.data() + block * kw * channels;
    for (int64_t ch = 0; ch < channels; ++ch)
      for (int64_t k = 0; k < kw; ++k) dconv[ch * kw + k] += part[k * channels + ch];
  }
}

}  // namespace

std::vector<OptionSpec> path_projection_options() {
  return {{"rank", OptionType::Int, 32, "rank R of the low-rank w projection (C → R → H·D)", 1.0, 4096.0},
          {"beta_clip_eps", OptionType::Float, 0.0,
           "clip β to at most 2 − eps (0: no clip; for low-precision runs where β near 2 can drift)", 0.0, 1.0, {},
           false, true}};
}

template <typename T>
PathProjection<T>::PathProjection(const EncodingSetup<T>& setup)
    : rank_(setup.options.at("rank").template get<int64_t>()),
      init_std_(setup.init_std),
      beta_clip_eps_(setup.options.at("beta_clip_eps").template get<double>()) {
  const auto& d = setup.dims;
  auto& p = *setup.params;
  down_ = p.add(setup.prefix + "path_w_down", {rank_, d.width});
  up_ = p.add(setup.prefix + "path_w_up", {d.heads * d.head_dim, rank_});
  conv_ = p.add(setup.prefix + "path_w_conv", {d.heads * d.head_dim, kPathConvWidth});
  beta_weight_ = p.add(setup.prefix + "path_beta_weight", {d.heads, d.width});
  beta_bias_ = p.add(setup.prefix + "path_beta_bias", {d.heads}, false);
}

template <typename T>
void PathProjection<T>::init_parameters(ParameterSet<T>& params, uint64_t seed) const {
  init_normal(params, down_, seed, init_std_);
  init_normal(params, up_, seed, init_std_);
  // PyTorch's default for a depthwise Conv1d: uniform within ±1/sqrt(kernel width).
  init_uniform(params, conv_, seed, 1.0 / std::sqrt(double(kPathConvWidth)));
  init_normal(params, beta_weight_, seed, init_std_);
  init_constant(params, beta_bias_, 0.0);  // β starts at 1
}

template <typename T>
void PathProjection<T>::forward(ParameterSet<T>& params, const T* x, const AttentionDims& d) {
  const int64_t n = d.batch * d.length, hd = d.heads * d.head_dim;
  low_.resize(n * rank_);
  y_.resize(n * hd);
  z_.resize(n * hd);
  w_flat_.resize(n * hd);
  norm_.resize(n * d.heads);
  w_.resize(n * hd);
  beta_pre_.resize(n * d.heads);
  beta_.resize(n * d.heads);
  linear_forward(x, params.value(down_), low_.data(), n, d.width, rank_);
  linear_forward(low_.data(), params.value(up_), y_.data(), n, rank_, hd);
  causal_conv_forward(y_.data(), params.value(conv_), z_.data(), d.batch, d.length, hd);
  silu_forward(z_.data(), w_flat_.data(), n * hd);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n * d.heads; ++r) {
    T* a = w_flat_.data() + r * d.head_dim;
    T sq = 0;
    for (int64_t e = 0; e < d.head_dim; ++e) sq += a[e] * a[e];
    norm_[r] = std::sqrt(sq);
    const T inv = T(1) / std::max(norm_[r], T(kNormEps));
    for (int64_t e = 0; e < d.head_dim; ++e) a[e] *= inv;
  }
  split_heads(w_flat_.data(), w_.data(), d.batch, d.length, d.heads, d.head_dim);
  linear_forward(x, params.value(beta_weight_), beta_pre_.data(), n, d.width, d.heads);
  const T* bias = params.value(beta_bias_);
  const T cap = T(2.0 - beta_clip_eps_);
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t t = 0; t < d.length; ++t)
      for (int64_t h = 0; h < d.heads; ++h) {
        T& pre = beta_pre_[(b * d.length + t) * d.heads + h];
        pre += bias[h];
        const T beta = T(2) * sigmoid(pre);
        beta_[(b * d.heads + h) * d.length + t] = beta_clip_eps_ > 0 ? std::min(beta, cap) : beta;
      }
}

template <typename T>
void PathProjection<T>::backward(ParameterSet<T>& params, const T* x, const AttentionDims& d, const T* dw,
                                 const T* dbeta, T* dx) {
  const int64_t n = d.batch * d.length, hd = d.heads * d.head_dim;
  // β = min(2σ(pre), 2 − ε): dpre = dβ·2σ(1 − σ) where not clipped.
  std::vector<T>& dpre = d_beta_pre_;
  dpre.resize(n * d.heads);
  const T cap = T(2.0 - beta_clip_eps_);
  T* dbias = params.grad(beta_bias_);
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t t = 0; t < d.length; ++t)
      for (int64_t h = 0; h < d.heads; ++h) {
        const int64_t i = (b * d.length + t) * d.heads + h;
        const T s = sigmoid(beta_pre_[i]);
        const bool clipped = beta_clip_eps_ > 0 && T(2) * s > cap;
        dpre[i] = clipped ? T(0) : dbeta[(b * d.heads + h) * d.length + t] * T(2) * s * (T(1) - s);
        dbias[h] += dpre[i];
      }
  linear_backward(x, params.value(beta_weight_), dpre.data(), dx, params.grad(beta_weight_), n, d.width, d.heads,
                  true);
  // w = a/‖a‖: da = (dw − w·(w·dw)) / ‖a‖
  std::vector<T>&da = d_act_, &dz = d_z_, &dy = d_y_, &dlow = d_low_;
  for (auto* buf : {&da, &dz, &dy}) buf->resize(n * hd);
  dlow.resize(n * rank_);
  merge_heads(dw, da.data(), d.batch, d.length, d.heads, d.head_dim);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n * d.heads; ++r) {
    T* g = da.data() + r * d.head_dim;
    const T* w = w_flat_.data() + r * d.head_dim;
    if (norm_[r] > T(kNormEps)) {
      T proj = 0;
      for (int64_t e = 0; e < d.head_dim; ++e) proj += w[e] * g[e];
      for (int64_t e = 0; e < d.head_dim; ++e) g[e] = (g[e] - proj * w[e]) / norm_[r];
    } else {
      for (int64_t e = 0; e < d.head_dim; ++e) g[e] /= T(kNormEps);
    }
  }
  silu_backward(z_.data(), da.data(), dz.data(), n * hd);
  causal_conv_backward(y_.data(), params.value(conv_), dz.data(), dy.data(), params.grad(conv_), d.batch, d.length,
                       hd);
  linear_backward(low_.data(), params.value(up_), dy.data(), dlow.data(), params.grad(up_), n, rank_, hd);
  linear_backward(x, params.value(down_), dlow.data(), dx, params.grad(down_), n, d.width, rank_, true);
}

template class PathProjection<float>;
template class PathProjection<double>;

}  // namespace pathbench
