// SwiGLU and GELU forward and backward.
#include "core/ops/activations.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

#include "core/ops/scalar_functions.h"

namespace pathbench {

template <typename T>
void swiglu_forward(const T* a, const T* b, T* h, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) h[i] = a[i] * sigmoid(a[i]) * b[i];
}

template <typename T>
void swiglu_backward(const T* a, const T* b, const T* dh, T* da, T* db, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    T s = sigmoid(a[i]);
    da[i] = dh[i] * b[i] * s * (T(1) + a[i] * (T(1) - s));
    db[i] = dh[i] * a[i] * s;
  }
}

// SiLU runs over blocks of values with Eigen's vectorized exp. Results go through an aligned
// temporary: Eigen splits a loop into scalar (std::exp) and vector (its own exp) parts by the
// destination's alignment, so writing into the caller's buffer directly would make results
// depend on where the buffer happens to be allocated.
constexpr int64_t kSiluBlock = 4096;

template <typename T>
void silu_forward(const T* a, T* h, int64_t n) {
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
#pragma omp parallel
  {
    Array out;
#pragma omp for schedule(static)
    for (int64_t start = 0; start < n; start += kSiluBlock) {
      const int64_t m = std::min(kSiluBlock, n - start);
      Eigen::Map<const Array> x(a + start, m);
      out = x / (T(1) + (-x).exp());
      std::copy_n(out.data(), m, h + start);
    }
  }
}

template <typename T>
void silu_backward(const T* a, const T* dh, T* da, int64_t n) {
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
#pragma omp parallel
  {
    Array s, out;
#pragma omp for schedule(static)
    for (int64_t start = 0; start < n; start += kSiluBlock) {
      const int64_t m = std::min(kSiluBlock, n - start);
      Eigen::Map<const Array> x(a + start, m), g(dh + start, m);
      s = T(1) / (T(1) + (-x).exp());
      out = g * s * (T(1) + x * (T(1) - s));
      std::copy_n(out.data(), m, da + start);
    }
  }
}

template <typename T>
void gelu_forward(const T* x, T* h, int64_t n) {
  const T inv_sqrt2 = T(0.70710678118654752440);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) h[i] = T(0.5) * x[i] * (T(1) + std::erf(x[i] * inv_sqrt2));
}

template <typename T>
void gelu_backward(const T* x, const T* dh, T* dx, int64_t n) {
  const T inv_sqrt2 = T(0.70710678118654752440);
  const T inv_sqrt2pi = T(0.39894228040143267794);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    T cdf = T(0.5) * (T(1) + std::erf(x[i] * inv_sqrt2));
    T pdf = inv_sqrt2pi * std::exp(T(-0.5) * x[i] * x[i]);
    dx[i] = dh[i] * (cdf + x[i] * pdf);
  }
}

template void swiglu_forward<float>(const float*, const float*, float*, int64_t);
template void swiglu_forward<double>(const double*, const double*, double*, int64_t);
template void swiglu_backward<float>(const float*, const float*, const float*, float*, float*, int64_t);
template void swiglu_backward<double>(const double*, const double*, const double*, double*, double*, int64_t);
template void silu_forward<float>(const float*, float*, int64_t);
template void silu_forward<double>(const double*, double*, int64_t);
template void silu_backward<float>(const float*, const float*, float*, int64_t);
template void silu_backward<double>(const double*, const double*, double*, int64_t);
template void gelu_forward<float>(const float*, float*, int64_t);
template void gelu_forward<double>(const double*, double*, int64_t);
template void gelu_backward<float>(const float*, const float*, float*, int64_t);
template void gelu_backward<double>(const double*, const double*, double*, int64_t);

}  // namespace pathbench
