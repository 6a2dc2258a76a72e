// Exact (Clopper–Pearson) confidence intervals for a binomial proportion: k successes in n trials.
// Used by `pathbench table --counts` to say how much a rate measured on n scored predictions can
// be trusted (0 errors in n reads bounds the error rate by about 3/n at 95 %).
#pragma once
#include <cstdint>
#include <utility>

namespace pathbench {

// The regularized incomplete beta function I_x(a, b), a, b > 0, 0 <= x <= 1.
double regularized_incomplete_beta(double a, double b, double x);

// The two-sided exact interval [lower, upper] at confidence `level` (e.g. 0.95) for k of n
// (0 <= k <= n, n >= 1): lower is 0 when k = 0, upper is 1 when k = n.
std::pair<double, double> clopper_pearson(int64_t k, int64_t n, double level = 0.95);

}  // namespace pathbench
