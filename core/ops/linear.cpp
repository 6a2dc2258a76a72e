// Linear map forward and backward through Eigen's matrix products, parallel over fixed blocks of
// output rows. Eigen's own threading is off (EIGEN_DONT_PARALLELIZE): its blocking depends on the
// thread count, which made CPU results depend on it. Here every output element is computed by one
// single-threaded product over the whole reduction, in blocks that do not depend on the thread
// count, so results are the same for any number of threads.
#include "core/ops/linear.h"

#include <algorithm>

#include "core/linalg.h"

namespace pathbench {

namespace {

// Rows per block of the products' outputs.
constexpr int64_t kRowBlock = 32;

// Calls block(first, count) for consecutive blocks of kRowBlock rows covering [0, rows), in parallel.
template <typename Block>
void for_row_blocks(int64_t rows, Block&& block) {
#pragma omp parallel for schedule(static)
  for (int64_t first = 0; first < rows; first += kRowBlock) block(first, std::min(kRowBlock, rows - first));
}

}  // namespace

template <typename T>
void linear_forward(const T* x, const T* w, T* y, int64_t n, int64_t in, int64_t out) {
  const auto w_m = as_matrix(w, out, in);
  for_row_blocks(n, [&](int64_t r0, int64_t rows) {
    as_matrix(y + r0 * out, rows, out).noalias() = as_matrix(x + r0 * in, rows, in) * w_m.transpose();
  });
}

template <typename T>
void linear_backward(const T* x, const T* w, const T* dy, T* dx, T* dw, int64_t n, int64_t in, int64_t out,
                     bool accumulate_dx) {
  const auto dy_m = as_matrix(dy, n, out);  // [N, out]
  const auto x_m = as_matrix(x, n, in);     // [N, in]
  const auto w_m = as_matrix(w, out, in);   // [out, in]
  if (dx)
    for_row_blocks(n, [&](int64_t r0, int64_t rows) {
      auto dx_block = as_matrix(dx + r0 * in, rows, in);  // [rows, in]
      if (accumulate_dx)
        dx_block.noalias() += dy_m.middleRows(r0, rows) * w_m;
      else
        dx_block.noalias() = dy_m.middleRows(r0, rows) * w_m;
    });
  // dw rows o0 … o0 + rows − 1: dy[:, o0 …]ᵀ · x, each a sum over all N rows in one product.
  for_row_blocks(out, [&](int64_t o0, int64_t rows) {
    as_matrix(dw + o0 * in, rows, in).noalias() += dy_m.middleCols(o0, rows).transpose() * x_m;
  });
}

template void linear_forward<float>(const float*, const float*, float*, int64_t, int64_t, int64_t);
template void linear_forward<double>(const double*, const double*, double*, int64_t, int64_t, int64_t);
template void linear_backward<float>(const float*, const float*, const float*, float*, float*, int64_t, int64_t,
                                     int64_t, bool);
template void linear_backward<double>(const double*, const double*, const double*, double*, double*, int64_t,
                                      int64_t, int64_t, bool);

}  // namespace pathbench
