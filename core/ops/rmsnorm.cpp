// RMSNorm forward and backward, parallel over rows.
#include "core/ops/rmsnorm.h"

#include <cmath>
#include <vector>

namespace pathbench {

template <typename T>
void rmsnorm_forward(const T* x, const T* g, T* y, T* rstd, int64_t n, int64_t c, T eps) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n; ++r) {
    const T* xr = x + r * c;
    T ss = 0;
    for (int64_t j = 0; j < c; ++j) ss += xr[j] * xr[j];
    T s = T(1) / std::sqrt(ss / T(c) + eps);
    rstd[r] = s;
    for (int64_t j = 0; j < c; ++j) y[r * c + j] = xr[j] * s * g[j];
  }
}

template <typename T>
void rmsnorm_backward(const T* x, const T* g, const T* rstd, const T* dy, T* dx, T* dg, int64_t n, int64_t c) {
  // dx_j = s·g_j·dy_j − s³/C · x_j · Σ_k dy_k g_k x_k
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n; ++r) {
    const T* xr = x + r * c;
    const T* dyr = dy + r * c;
    T s = rstd[r];
    T dot = 0;
    for (int64_t j = 0; j < c; ++j) dot += dyr[j] * g[j] * xr[j];
    T coef = s * s * s * dot / T(c);
    for (int64_t j = 0; j < c; ++j) dx[r * c + j] += s * g[j] * dyr[j] - coef * xr[j];
  }
  // dg_j = Σ_r dy_rj · x_rj · s_r, parallel over columns so each sum has one fixed order.
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < c; ++j) {
    T acc = 0;
    for (int64_t r = 0; r < n; ++r) acc += dy[r * c + j] * x[r * c + j] * rstd[r];
    dg[j] += acc;
  }
}

template void rmsnorm_forward<float>(const float*, const float*, float*, float*, int64_t, int64_t, float);
template void rmsnorm_forward<double>(const double*, const double*, double*, double*, int64_t, int64_t, double);
template void rmsnorm_backward<float>(const float*, const float*, const float*, const float*, float*, float*,
                                      int64_t, int64_t);
template void rmsnorm_backward<double>(const double*, const double*, const double*, const double*, double*,
                                       double*, int64_t, int64_t);

}  // namespace pathbench
