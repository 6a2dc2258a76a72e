// Exact binomial intervals: the incomplete beta function against closed forms, and Clopper–Pearson
// bounds against values computed independently (scipy.stats.beta.ppf: the bounds R's binom.test gives)
// and against their definition.
#include <catch2/catch.hpp>

#include <cmath>

#include "experiments/binomial_interval.h"

using namespace pathbench;

TEST_CASE("the regularized incomplete beta function matches closed forms", "[stats]") {
  for (double x : {0.0, 1e-6, 0.1, 0.37, 0.5, 0.9, 1.0}) {
    INFO("x " << x);
    CHECK(regularized_incomplete_beta(1, 1, x) == Approx(x).margin(1e-14));                       // uniform
    CHECK(regularized_incomplete_beta(2, 1, x) == Approx(x * x).margin(1e-14));                   // x^a for b = 1
    CHECK(regularized_incomplete_beta(1, 3, x) == Approx(1 - std::pow(1 - x, 3)).margin(1e-14));  // a = 1
    // I_x(a, b) = 1 − I_{1−x}(b, a)
    CHECK(regularized_incomplete_beta(7.5, 3.25, x) == Approx(1 - regularized_incomplete_beta(3.25, 7.5, 1 - x)).margin(1e-13));
  }
  // The binomial tail: P(X >= k) for X ~ Bin(n, p) is I_p(k, n − k + 1).
  const int n = 20, k = 7;
  const double p = 0.3;
  double tail = 0;
  for (int j = k; j <= n; ++j) tail += std::exp(std::lgamma(n + 1) - std::lgamma(j + 1) - std::lgamma(n - j + 1)) *
                                       std::pow(p, j) * std::pow(1 - p, n - j);
  CHECK(regularized_incomplete_beta(k, n - k + 1, p) == Approx(tail).epsilon(1e-12));
}

TEST_CASE("Clopper-Pearson intervals match independently computed bounds and their defining tail equations", "[stats]") {
  // scipy.stats.beta.ppf(0.025, k, n - k + 1) and beta.ppf(0.975, k + 1, n - k)
  auto [lo, hi] = clopper_pearson(5, 10);
  CHECK(lo == Approx(0.1870860).epsilon(1e-6));
  CHECK(hi == Approx(0.8129140).epsilon(1e-6));
  std::tie(lo, hi) = clopper_pearson(0, 10);
  CHECK(lo == 0);
  CHECK(hi == Approx(0.3084971).epsilon(1e-6));
  std::tie(lo, hi) = clopper_pearson(10, 10);
  CHECK(lo == Approx(0.6915029).epsilon(1e-6));
  CHECK(hi == 1);
  // 0 errors in a million reads: upper bound 1 − 0.025^(1/n) ≈ 3.69e-6 (the "rule of three" is 3/n).
  std::tie(lo, hi) = clopper_pearson(0, 1000000);
  CHECK(hi == Approx(1 - std::pow(0.025, 1e-6)).epsilon(1e-9));
  // Large counts: each bound leaves 2.5 % in its tail, and equals the bound found independently from
  // exact binomial sums (Python's standard library: bisection on P(X ≥ k) and P(X ≤ k) in log space).
  struct Pinned {
    int64_t k, n;
    double lower, upper;
  };
  for (const Pinned& c : {Pinned{1, 1000000, 2.531780766e-08, 5.571630655e-06},
                          Pinned{37, 29036, 8.973646351e-04, 1.756003917e-03},
                          Pinned{216322 / 3, 216322, 0.331345214, 0.335322838}}) {
    INFO(c.k << " / " << c.n);
    std::tie(lo, hi) = clopper_pearson(c.k, c.n);
    CHECK(lo == Approx(c.lower).epsilon(1e-8));
    CHECK(hi == Approx(c.upper).epsilon(1e-8));
    CHECK(regularized_incomplete_beta(double(c.k), double(c.n - c.k + 1), lo) == Approx(0.025).epsilon(1e-6));
    CHECK(regularized_incomplete_beta(double(c.k + 1), double(c.n - c.k), hi) == Approx(0.975).epsilon(1e-6));
  }
  CHECK_THROWS(clopper_pearson(3, 2));
  CHECK_THROWS(clopper_pearson(0, 0));
}
