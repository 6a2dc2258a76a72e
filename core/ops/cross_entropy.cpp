// Masked cross-entropy forward (softmax per row) and backward.
#include "core/ops/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace pathbench {

namespace {
double weight_sum(const float* weights, int64_t n) {
  double s = 0;
  for (int64_t r = 0; r < n; ++r) s += weights[r];
  return s;
}
}  // namespace

template <typename T>
T cross_entropy_forward(const T* logits, const int32_t* targets, const float* weights, T* probs, int64_t n,
                        int64_t v) {
  std::vector<double> row_loss(n, 0.0);  // summed serially below so the loss is bit-reproducible
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n; ++r) {
    const T* lr = logits + r * v;
    T* pr = probs + r * v;
    T mx = *std::max_element(lr, lr + v);
    T sum = 0;
    for (int64_t j = 0; j < v; ++j) sum += (pr[j] = std::exp(lr[j] - mx));
    for (int64_t j = 0; j < v; ++j) pr[j] /= sum;
    if (weights[r] != 0.0f) row_loss[r] = double(weights[r]) * double(mx + std::log(sum) - lr[targets[r]]);
  }
  double total = 0;
  for (double x : row_loss) total += x;
  double wsum = weight_sum(weights, n);
  return wsum > 0 ? T(total / wsum) : T(0);
}

template <typename T>
void cross_entropy_backward(const T* probs, const int32_t* targets, const float* weights, T dloss, T* dlogits,
                            int64_t n, int64_t v) {
  double wsum = weight_sum(weights, n);
  T scale = wsum > 0 ? T(dloss / wsum) : T(0);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n; ++r) {
    T w = T(weights[r]) * scale;
    for (int64_t j = 0; j < v; ++j) dlogits[r * v + j] = w * probs[r * v + j];
    dlogits[r * v + targets[r]] -= w;
  }
}

template float cross_entropy_forward<float>(const float*, const int32_t*, const float*, float*, int64_t, int64_t);
template double cross_entropy_forward<double>(const double*, const int32_t*, const float*, double*, int64_t,
                                              int64_t);
template void cross_entropy_backward<float>(const float*, const int32_t*, const float*, float, float*, int64_t,
                                            int64_t);
template void cross_entropy_backward<double>(const double*, const int32_t*, const float*, double, double*, int64_t,
                                             int64_t);

}  // namespace pathbench
