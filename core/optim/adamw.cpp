// AdamW update, gradient clipping and the learning-rate schedule.
#include "core/optim/adamw.h"

#include <algorithm>
#include <cmath>

namespace pathbench {

AdamWTerms adamw_terms(const AdamWConfig& config, double lr, int64_t t) {
  const double bc1 = 1.0 - std::pow(config.beta1, double(t));
  const double bc2 = 1.0 - std::pow(config.beta2, double(t));
  return {lr / bc1, 1.0 / std::sqrt(bc2), lr * config.weight_decay};
}

template <typename T>
AdamW<T>::AdamW(const ParameterSet<T>& params, AdamWConfig config)
    : config_(config), m_(params.count(), T(0)), v_(params.count(), T(0)), decay_(params.count(), 0) {
  for (const auto& e : params.entries())
    std::fill(decay_.begin() + e.offset, decay_.begin() + e.offset + e.size, e.weight_decay ? 1 : 0);
}

template <typename T>
void AdamW<T>::step(ParameterSet<T>& params, double lr) {
  const AdamWTerms terms = adamw_terms(config_, lr, ++t_);
  const T b1 = T(config_.beta1), b2 = T(config_.beta2), eps = T(config_.eps);
  const T step_size = T(terms.step_size), inv_sqrt_bc2 = T(terms.inv_sqrt_bc2), decay = T(terms.decay);
  T* p = params.values().data();
  const T* g = params.grads().data();
  const int64_t n = int64_t(m_.size());
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    m_[i] = b1 * m_[i] + (T(1) - b1) * g[i];
    v_[i] = b2 * v_[i] + (T(1) - b2) * g[i] * g[i];
    if (decay_[i]) p[i] -= decay * p[i];
    p[i] -= step_size * m_[i] / (std::sqrt(v_[i]) * inv_sqrt_bc2 + eps);
  }
}

template <typename T>
double clip_grad_norm(std::vector<T>& grads, double max_norm) {
  double ss = 0;  // serial sum: bit-reproducible
  for (T x : grads) ss += double(x) * double(x);
  const double norm = std::sqrt(ss);
  if (max_norm > 0 && norm > max_norm) {
    const T scale = T(max_norm / (norm + 1e-12));
    for (T& x : grads) x *= scale;
  }
  return norm;
}

double LrSchedule::at(int64_t step) const {
  if (warmup > 0 && step < warmup) return peak * double(step + 1) / double(warmup);
  const double span = std::max<int64_t>(1, total - warmup);
  const double progress = std::clamp(double(step - warmup) / span, 0.0, 1.0);
  return peak * (min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + std::cos(3.141592653589793 * progress)));
}

template class AdamW<float>;
template class AdamW<double>;
template double clip_grad_norm<float>(std::vector<float>&, double);
template double clip_grad_norm<double>(std::vector<double>&, double);

}  // namespace pathbench
