// PaTH's parameterization of the Householder-like transforms H_t = I − β_t w_t w_tᵀ from the
// layer input x (the reference implementation's): y = x·W_aᵀ·W_bᵀ (low rank: W_a [R, C], W_b
// [H·D, R], R = 32 by default), a causal depthwise convolution of width 3 without bias over time
// (per channel of H·D), SiLU, then w = y / ‖y‖ per head; β = 2·σ(x·u_βᵀ + b_β) per head and token,
// optionally clipped to β ≤ 2 − ε.
#pragma once
#include <cstdint>
#include <vector>

#include "core/attention/encoding.h"

namespace pathbench {

constexpr int64_t kPathConvWidth = 3;

// The options the projection adds to an encoding (path, path_fox).
std::vector<OptionSpec> path_projection_options();

template <typename T>
class PathProjection {
 public:
  // Declares "<prefix>path_w_down" [R, C], "<prefix>path_w_up" [H·D, R], "<prefix>path_w_conv"
  // [H·D, 3], "<prefix>path_beta_weight" [H, C] and "<prefix>path_beta_bias" [H].
  explicit PathProjection(const EncodingSetup<T>& setup);

  void init_parameters(ParameterSet<T>& params, uint64_t seed) const;

  // x: [B, T, C]. Afterwards w() is [B, H, T, D] (unit rows) and beta() is [B, H, T].
  void forward(ParameterSet<T>& params, const T* x, const AttentionDims& dims);
  const T* w() const { return w_.data(); }
  const T* beta() const { return beta_.data(); }

  // dw: [B, H, T, D], dbeta: [B, H, T] (gradients with respect to w() and beta()); adds the
  // parameter gradients and dx [B, T, C].
  void backward(ParameterSet<T>& params, const T* x, const AttentionDims& dims, const T* dw, const T* dbeta, T* dx);

 private:
  typename ParameterSet<T>::Id down_, up_, conv_, beta_weight_, beta_bias_;
  int64_t rank_;
  double init_std_, beta_clip_eps_;
  std::vector<T> low_;        // [N, R] x·W_aᵀ
  std::vector<T> y_;          // [N, H·D] before the convolution
  std::vector<T> z_;          // [N, H·D] after the convolution, before SiLU
  std::vector<T> norm_;       // [N, H] ‖silu(z)‖ per head
  std::vector<T> w_flat_;     // [N, H·D] the unit vectors in the projection layout
  std::vector<T> w_;          // [B, H, T, D]
  std::vector<T> beta_pre_;   // [N, H] x·u_βᵀ + b_β
  std::vector<T> beta_;       // [B, H, T]
  std::vector<T> d_beta_pre_;             // [N, H] backward scratch
  std::vector<T> d_act_, d_z_, d_y_;      // [N, H·D] backward scratch
  std::vector<T> d_low_;                  // [N, R] backward scratch
};

}  // namespace pathbench
