// Linear map forward and backward through Eigen's matrix products.
#include "core/ops/linear.h"

#include "core/linalg.h"

namespace pathbench {

template <typename T>
void linear_forward(const T* x, const T* w, T* y, int64_t n, int64_t in, int64_t out) {
  as_matrix(y, n, out).noalias() = as_matrix(x, n, in) * as_matrix(w, out, in).transpose();
}

template <typename T>
void linear_backward(const T* x, const T* w, const T* dy, T* dx, T* dw, int64_t n, int64_t in, int64_t out,
                     bool accumulate_dx) {
  auto dy_m = as_matrix(dy, n, out);
  if (dx) {
    if (accumulate_dx)
      as_matrix(dx, n, in).noalias() += dy_m * as_matrix(w, out, in);
    else
      as_matrix(dx, n, in).noalias() = dy_m * as_matrix(w, out, in);
  }
  as_matrix(dw, out, in).noalias() += dy_m.transpose() * as_matrix(x, n, in);
}

template void linear_forward<float>(const float*, const float*, float*, int64_t, int64_t, int64_t);
template void linear_forward<double>(const double*, const double*, double*, int64_t, int64_t, int64_t);
template void linear_backward<float>(const float*, const float*, const float*, float*, float*, int64_t, int64_t,
                                     int64_t, bool);
template void linear_backward<double>(const double*, const double*, const double*, double*, double*, int64_t,
                                      int64_t, int64_t, bool);

}  // namespace pathbench
