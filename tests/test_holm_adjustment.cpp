// Holm's adjustment against values from R's p.adjust(p, "holm") and against its definition.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

#include "experiments/holm_adjustment.h"

using namespace pathbench;

TEST_CASE("Holm's adjustment gives R's p.adjust values", "[stats]") {
  // p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") = 0.03 0.06 0.06 0.02: sorted, 4·0.005, 3·0.01,
  // 2·0.03 = 0.06, and 1·0.04 raised to the running maximum 0.06.
  const std::vector<double> adjusted = holm_adjusted({0.01, 0.04, 0.03, 0.005});
  REQUIRE(adjusted.size() == 4);
  CHECK(adjusted[0] == Approx(0.03).epsilon(1e-12));
  CHECK(adjusted[1] == Approx(0.06).epsilon(1e-12));
  CHECK(adjusted[2] == Approx(0.06).epsilon(1e-12));
  CHECK(adjusted[3] == Approx(0.02).epsilon(1e-12));
  // Capped at 1; one test is its own adjustment; none gives none.
  const std::vector<double> capped = holm_adjusted({0.6, 0.5});
  CHECK(capped[0] == 1.0);
  CHECK(capped[1] == 1.0);
  CHECK(holm_adjusted({0.2}) == std::vector<double>{0.2});
  CHECK(holm_adjusted({}).empty());
  // Ties: both of two equal p-values get 2p.
  CHECK(holm_adjusted({0.01, 0.01}) == std::vector<double>{0.02, 0.02});
}

TEST_CASE("Holm's adjustment never lowers a p-value and keeps their order", "[stats]") {
  const std::vector<double> p = {0.3, 0.001, 0.02, 0.02, 0.9, 0.0004, 0.05};
  const std::vector<double> adjusted = holm_adjusted(p);
  for (size_t i = 0; i < p.size(); ++i) {
    CHECK(adjusted[i] >= p[i]);
    CHECK(adjusted[i] <= 1.0);
    for (size_t j = 0; j < p.size(); ++j)
      if (p[i] < p[j]) CHECK(adjusted[i] <= adjusted[j]);
  }
  CHECK_THROWS_AS(holm_adjusted({0.5, 1.5}), std::invalid_argument);
}
