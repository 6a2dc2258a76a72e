// The fields every attention kernel's argument struct shares (SoftmaxAttentionArgs,
// StickBreakingArgs, PathAttentionArgs and their CUDA twins): slices B·H, length, head dimension,
// scale 1/sqrt(D), q, k, v. Eigen-free, so CPU encodings and .cu-facing code both use it.
#pragma once
#include <cmath>

#include "core/attention/encoding.h"

namespace pathbench {

template <class Args, typename S>
Args kernel_args(const AttentionDims& d, const S* q, const S* k, const S* v) {
  using Scale = decltype(Args::scale);
  Args a;
  a.batch_heads = d.batch * d.heads;
  a.length = d.length;
  a.head_dim = d.head_dim;
  a.scale = Scale(1) / std::sqrt(Scale(d.head_dim));
  a.q = q;
  a.k = k;
  a.v = v;
  return a;
}

}  // namespace pathbench
