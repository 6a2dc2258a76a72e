// Clopper–Pearson intervals: the bounds solve I_p(k, n−k+1) = α/2 and I_p(k+1, n−k) = 1 − α/2,
// found by bisection on the regularized incomplete beta function (a continued fraction, evaluated
// with the modified Lentz method).
#include "experiments/binomial_interval.h"

#include <cmath>
#include <stdexcept>

namespace pathbench {

namespace {

// The continued fraction of I_x(a, b), which converges quickly for x < (a + 1) / (a + b + 2).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double tiny = 1e-300, eps = 1e-15;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m < 100000; ++m) {
    const double m2 = 2.0 * m;
    // even step
    double num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + num * d;
    c = 1 + num / c;
    if (std::fabs(d) < tiny) d = tiny;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    // odd step
    num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + num * d;
    c = 1 + num / c;
    if (std::fabs(d) < tiny) d = tiny;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1) < eps) return h;
  }
  return h;
}

}  // namespace

double regularized_incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  if (x < (a + 1) / (a + b + 2)) return std::exp(log_front) * beta_continued_fraction(a, b, x) / a;
  return 1 - std::exp(log_front) * beta_continued_fraction(b, a, 1 - x) / b;
}

std::pair<double, double> clopper_pearson(int64_t k, int64_t n, double level) {
  if (n < 1 || k < 0 || k > n || !(level > 0 && level < 1))
    throw std::invalid_argument("clopper_pearson: needs 0 <= k <= n, n >= 1 and 0 < level < 1");
  const double alpha = 1 - level, kd = double(k), nd = double(n);
  // The p in (0, 1) where the increasing function f(p) = I_p(a, b) equals `target`.
  auto solve = [](double a, double b, double target) {
    double lo = 0, hi = 1;
    for (int i = 0; i < 200 && hi - lo > 1e-17 * std::max(lo, 1e-300); ++i) {
      const double mid = 0.5 * (lo + hi);
      (regularized_incomplete_beta(a, b, mid) < target ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
  };
  const double lower = k == 0 ? 0.0 : solve(kd, nd - kd + 1, alpha / 2);
  const double upper = k == n ? 1.0 : solve(kd + 1, nd - kd, 1 - alpha / 2);
  return {lower, upper};
}

}  // namespace pathbench
