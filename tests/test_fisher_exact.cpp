// Fisher's exact test against hand-countable tables and a brute-force reference that enumerates
// the tables with exact integer binomial coefficients; its power against values computed
// independently (Python, math.comb over every outcome of the two groups).
#include <catch2/catch.hpp>

#include <cstdint>
#include <stdexcept>

#include "experiments/fisher_exact.h"

using namespace pathbench;

namespace {

uint64_t choose(int64_t n, int64_t k) {
  if (k < 0 || k > n) return 0;
  uint64_t c = 1;
  for (int64_t i = 1; i <= k; ++i) c = c * uint64_t(n - k + i) / uint64_t(i);  // exact at every step
  return c;
}

// Σ over first-row counts x of C(k, x) C(n−k, n1−x) where that product is <= the observed one.
double brute_force(int64_t k1, int64_t n1, int64_t k2, int64_t n2) {
  const int64_t n = n1 + n2, k = k1 + k2;
  const uint64_t observed = choose(k, k1) * choose(n - k, n1 - k1);
  uint64_t sum = 0;
  for (int64_t x = 0; x <= n1; ++x) {
    const uint64_t ways = choose(k, x) * choose(n - k, n1 - x);
    if (ways <= observed) sum += ways;
  }
  return double(sum) / double(choose(n, n1));
}

}  // namespace

TEST_CASE("Fisher's exact test gives the p-values of hand-counted tables", "[stats]") {
  // Tea tasting, 3 of 4 against 1 of 4: tables x = 0, 1, 3, 4 (1 + 16 + 16 + 1 of 70 ways) are no
  // more likely than the observed one.
  CHECK(fisher_exact_two_sided(3, 4, 1, 4) == Approx(34.0 / 70).epsilon(1e-12));
  // 4 of 6 against 2 of 6: C(6,x) C(6,6−x) / C(12,6) for x = 0, 1, 2, 4, 5, 6: (1+36+225+225+36+1)/924.
  CHECK(fisher_exact_two_sided(4, 6, 2, 6) == Approx(524.0 / 924).epsilon(1e-12));
  // Equal rows and the most likely table: p = 1. Everything against nothing at n = 3: 2/20.
  CHECK(fisher_exact_two_sided(2, 4, 2, 4) == Approx(1.0));
  CHECK(fisher_exact_two_sided(3, 3, 0, 3) == Approx(2.0 / 20).epsilon(1e-12));
  // The test is symmetric in the rows and in successes against failures.
  CHECK(fisher_exact_two_sided(1, 8, 6, 8) == Approx(fisher_exact_two_sided(6, 8, 1, 8)).epsilon(1e-12));
  CHECK(fisher_exact_two_sided(1, 8, 6, 8) == Approx(fisher_exact_two_sided(7, 8, 2, 8)).epsilon(1e-12));
}

TEST_CASE("Fisher's exact test matches an exact enumeration of tables", "[stats]") {
  for (int64_t n1 : {1, 3, 8, 13})
    for (int64_t n2 : {2, 8, 11})
      for (int64_t k1 = 0; k1 <= n1; ++k1)
        for (int64_t k2 = 0; k2 <= n2; ++k2) {
          INFO(k1 << " of " << n1 << " against " << k2 << " of " << n2);
          CHECK(fisher_exact_two_sided(k1, n1, k2, n2) == Approx(brute_force(k1, n1, k2, n2)).epsilon(1e-9));
        }
}

TEST_CASE("Fisher's exact test rejects impossible tables", "[stats]") {
  CHECK_THROWS_AS(fisher_exact_two_sided(5, 4, 1, 4), std::invalid_argument);
  CHECK_THROWS_AS(fisher_exact_two_sided(-1, 4, 1, 4), std::invalid_argument);
  CHECK_THROWS_AS(fisher_exact_two_sided(0, 0, 0, 0), std::invalid_argument);
}

TEST_CASE("the power of Fisher's exact test matches independently computed values", "[stats]") {
  CHECK(fisher_power(0.25, 0.75, 8, 0.05) == Approx(0.40499089332297444).epsilon(1e-9));
  CHECK(fisher_power(0.25, 0.625, 16, 0.05) == Approx(0.43653085837389705).epsilon(1e-9));
  CHECK(fisher_power(0.0, 0.25, 16, 0.05) == Approx(0.36981382477097213).epsilon(1e-9));
  // Equal rates: the rejection rate is the test's size, at most alpha (the test is conservative).
  CHECK(fisher_power(0.3, 0.3, 10, 0.05) == Approx(0.011876875166213862).epsilon(1e-9));
  for (double rate : {0.0, 0.2, 0.5, 0.9, 1.0})
    for (int64_t n : {1, 5, 17}) CHECK(fisher_power(rate, rate, n, 0.05) <= 0.05);
  // More seeds, more power; symmetric in the two groups.
  CHECK(fisher_power(0.25, 0.75, 32, 0.05) > fisher_power(0.25, 0.75, 16, 0.05));
  CHECK(fisher_power(0.75, 0.25, 16, 0.05) == Approx(fisher_power(0.25, 0.75, 16, 0.05)).epsilon(1e-12));
  CHECK_THROWS_AS(fisher_power(1.5, 0.5, 8, 0.05), std::invalid_argument);
  CHECK_THROWS_AS(fisher_power(0.5, 0.5, 0, 0.05), std::invalid_argument);
  CHECK_THROWS_AS(fisher_power(0.5, 0.5, kMaxPowerSeeds + 1, 0.05), std::invalid_argument);
  CHECK_THROWS_AS(fisher_power(0.5, 0.5, 8, 1.0), std::invalid_argument);
}
