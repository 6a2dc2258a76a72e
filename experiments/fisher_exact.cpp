// Fisher's exact test: the hypergeometric probabilities of every table with the observed margins,
// in logs (lgamma) so that large counts neither overflow nor underflow, summed over those no more
// likely than the observed table; its power, by enumerating the outcomes of two binomial groups.
#include "experiments/fisher_exact.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace pathbench {

namespace {

double log_choose(int64_t n, int64_t k) {
  return std::lgamma(double(n) + 1) - std::lgamma(double(k) + 1) - std::lgamma(double(n - k) + 1);
}

}  // namespace

double fisher_exact_two_sided(int64_t k1, int64_t n1, int64_t k2, int64_t n2) {
  if (k1 < 0 || k2 < 0 || k1 > n1 || k2 > n2 || n1 + n2 < 1)
    throw std::invalid_argument("fisher_exact_two_sided: need 0 <= k <= n for both rows and some trials");
  const int64_t n = n1 + n2, k = k1 + k2;  // trials and successes in all
  // x: successes in the first row; P(x) = C(k, x) C(n − k, n1 − x) / C(n, n1)
  const auto log_p = [&](int64_t x) { return log_choose(k, x) + log_choose(n - k, n1 - x) - log_choose(n, n1); };
  const double observed = log_p(k1);
  double p = 0;
  for (int64_t x = std::max<int64_t>(0, n1 - (n - k)); x <= std::min(k, n1); ++x) {
    const double lp = log_p(x);
    if (lp <= observed + 1e-7) p += std::exp(lp);
  }
  return std::min(1.0, p);
}

double fisher_power(double rate1, double rate2, int64_t n, double alpha) {
  if (!(rate1 >= 0 && rate1 <= 1 && rate2 >= 0 && rate2 <= 1) || n < 1 || n > kMaxPowerSeeds ||
      !(alpha > 0 && alpha < 1))
    throw std::invalid_argument("fisher_power: need rates in [0, 1], 1 <= n <= " + std::to_string(kMaxPowerSeeds) +
                                " and 0 < alpha < 1");
  // P(k of n) for each group; pow(0, 0) = 1 covers the rates 0 and 1.
  const auto binomial = [n](double rate) {
    std::vector<double> pmf(size_t(n + 1));
    for (int64_t k = 0; k <= n; ++k)
      pmf[size_t(k)] = std::exp(log_choose(n, k)) * std::pow(rate, double(k)) * std::pow(1 - rate, double(n - k));
    return pmf;
  };
  const std::vector<double> p1 = binomial(rate1), p2 = binomial(rate2);
  double power = 0;
  for (int64_t k1 = 0; k1 <= n; ++k1)
    for (int64_t k2 = 0; k2 <= n; ++k2)
      if (p1[size_t(k1)] * p2[size_t(k2)] > 0 && fisher_exact_two_sided(k1, n, k2, n) <= alpha)
        power += p1[size_t(k1)] * p2[size_t(k2)];
  return power;
}

}  // namespace pathbench
