// The log-rank test against R's survival::survdiff on its `aml` data and a hand-counted example,
// and its edge cases.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "experiments/log_rank.h"

using namespace pathbench;

TEST_CASE("the log-rank test gives survdiff's statistic on the aml data", "[stats]") {
  // survdiff(Surv(time, status) ~ x, data = aml): χ² = 3.396 on 1 degree of freedom, p = 0.0653.
  const std::vector<TimeToEvent> maintained = {{9, true},  {13, true}, {13, false}, {18, true},
                                               {23, true}, {28, false}, {31, true}, {34, true},
                                               {45, false}, {48, true}, {161, false}};
  const std::vector<TimeToEvent> not_maintained = {{5, true},  {5, true},  {8, true},  {8, true},
                                                   {12, true}, {16, false}, {23, true}, {27, true},
                                                   {30, true}, {33, true}, {43, true}, {45, true}};
  const double p = log_rank_two_sided(maintained, not_maintained);
  CHECK(p == Approx(std::erfc(std::sqrt(3.3963886989776 / 2))).epsilon(1e-9));
  CHECK(p == Approx(0.0653).margin(5e-5));
  CHECK(log_rank_two_sided(not_maintained, maintained) == Approx(p).epsilon(1e-12));  // symmetric
}

TEST_CASE("the log-rank test on hand-counted and degenerate groups", "[stats]") {
  // Two events at time 1 in group b, five at risk (a: 3, one censored at 1): O − E = −1.2 for a,
  // variance 2 (3/5)(2/5)(3/4) = 0.36; a's later events have no b at risk. χ² = 4.
  const std::vector<TimeToEvent> a = {{2, true}, {3, true}, {1, false}}, b = {{1, true}, {1, true}};
  CHECK(log_rank_two_sided(a, b) == Approx(std::erfc(std::sqrt(2.0))).epsilon(1e-12));
  // Identical groups: no evidence either way.
  CHECK(log_rank_two_sided(a, a) == Approx(1.0));
  // No event anywhere, or an empty group: no information, p = 1.
  CHECK(log_rank_two_sided({{5, false}}, {{5, false}, {7, false}}) == 1.0);
  CHECK(log_rank_two_sided({}, b) == 1.0);
}
