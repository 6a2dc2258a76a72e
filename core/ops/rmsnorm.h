// RMSNorm over the last dimension: y = x / sqrt(mean(x²) + eps) · g.
#pragma once
#include <cstdint>

namespace pathbench {

// x, y: [N, C]; g: [C]; rstd: [N] (saved for backward).
template <typename T>
void rmsnorm_forward(const T* x, const T* g, T* y, T* rstd, int64_t n, int64_t c, T eps);

// dx[N, C] += gradient (accumulated, so the residual stream's gradient can flow through);
// dg[C] += gradient.
template <typename T>
void rmsnorm_backward(const T* x, const T* g, const T* rstd, const T* dy, T* dx, T* dg, int64_t n, int64_t c);

}  // namespace pathbench
