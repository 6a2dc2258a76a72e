// Fisher's exact test for two proportions (a 2 × 2 table): is k1 of n1 different from k2 of n2?
// Used by `pathbench table --passing --against ROW` to say whether two encodings' rates of
// learning (seeds that pass) differ by more than the seeds' luck would explain, and by
// `pathbench power` to say how many seeds such a comparison needs.
#pragma once
#include <cstdint>

namespace pathbench {

// The two-sided p-value: the probability, under equal proportions and with the table's margins
// fixed (a hypergeometric count), of a table no more likely than the observed one — the
// definition R's fisher.test uses (ties within a relative 1e-7 count as no more likely).
// Requires 0 <= k1 <= n1, 0 <= k2 <= n2, n1 + n2 >= 1.
double fisher_exact_two_sided(int64_t k1, int64_t n1, int64_t k2, int64_t n2);

// The power of that test with n seeds per group: the probability that p <= alpha when the two
// groups pass with rates rate1 and rate2 (k1 ~ Bin(n, rate1), k2 ~ Bin(n, rate2)), summed exactly
// over the (n + 1)² outcomes. Requires rates in [0, 1], 1 <= n <= kMaxPowerSeeds, 0 < alpha < 1.
constexpr int64_t kMaxPowerSeeds = 200;
double fisher_power(double rate1, double rate2, int64_t n, double alpha);

}  // namespace pathbench
