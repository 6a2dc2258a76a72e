// Fisher's exact test: the hypergeometric probabilities of every table with the observed margins,
// in logs (lgamma) so that large counts neither overflow nor underflow, summed over those no more
// likely than the observed table.
#include "experiments/fisher_exact.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

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

}  // namespace pathbench
