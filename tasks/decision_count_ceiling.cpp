// The count-only accuracy of the decision word problem, by dynamic programming over the word length
// on (count vector → probability of each product), never enumerating words.
#include "tasks/decision_count_ceiling.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace pathbench {

namespace {

// C(n, k) in floating point: exact up to 2^53, and larger values are only compared with the limits.
double binomial(int64_t n, int64_t k) {
  k = std::min(k, n - k);
  double c = 1;
  for (int64_t j = 1; j <= k; ++j) c = c * double(n - k + j) / double(j);
  return c;
}

void check_within_limits(const FiniteGroup& group, int64_t letters, int64_t length) {
  const double vectors = binomial(length + letters - 1, letters - 1);  // count vectors of `length` letters
  const double probabilities = vectors * group.order();
  // Each count vector of every shorter length passes each probability on once per letter.
  const double additions = binomial(length + letters - 1, letters) * group.order() * letters;
  if (probabilities > kMaxCountCeilingProbabilities || additions > kMaxCountCeilingAdditions)
    throw Error(fmt::format("count-only accuracy at length {}: {:.4g} count vectors of {} generators × {} elements of "
                            "{} are {:.4g} probabilities at that length (limit {:.0e}) and {:.4g} additions up to it "
                            "(limit {:.0e})",
                            length, vectors, letters, group.order(), group.name(), probabilities,
                            kMaxCountCeilingProbabilities, additions, kMaxCountCeilingAdditions));
}

// Numbers the count vectors of n letters over k generators 0 … C(n+k−1, k−1) − 1, so that one
// length's probabilities fill one array. With prefix sums s_i = c_0 + … + c_{i−1}, the values
// s_i + i − 1 (i = 1 … k−1) increase strictly, and the combinatorial number system numbers such a
// set by Σ_i C(s_i + i − 1, i): the order of the numbers compares s_{k−1} first, then s_{k−2}, …
class CountVectorNumbers {
 public:
  // For count vectors of at most `longest` letters.
  CountVectorNumbers(int64_t letters, int64_t longest)
      : choose_(size_t(letters), std::vector<int64_t>(size_t(longest) + 1, 1)) {
    for (size_t i = 1; i < choose_.size(); ++i)
      for (size_t s = 1; s < choose_[i].size(); ++s) choose_[i][s] = choose_[i - 1][s] + choose_[i][s - 1];
  }

  // How many count vectors there are of n letters.
  int64_t count(int64_t n) const { return choose_.back()[n]; }

  // The first count vector of n letters (number 0: every s_i is 0).
  static std::vector<int> first(size_t letters, int64_t n) {
    std::vector<int> counts(letters, 0);
    counts.back() = int(n);
    return counts;
  }

  // The count vector numbered one more: the smallest s_i that can rise (s_i < s_{i+1}, i.e. the
  // first c_i > 0 with i ≥ 1) rises by one and the s below it drop to 0. False after the last.
  static bool next(std::vector<int>& counts) {
    for (size_t i = 1; i < counts.size(); ++i)
      if (counts[i] > 0) {
        const int below = counts[0];  // c_1 … c_{i−1} are 0
        counts[0] = 0;
        counts[i - 1] = below + 1;
        --counts[i];
        return true;
      }
    return false;
  }

  // The numbers of `counts` (numbered `number`) with one more letter of generator j, for every j.
  // That letter raises s_i by one for every i > j, which adds C(s_i + i − 1, i − 1) to the number.
  void one_letter_longer(const std::vector<int>& counts, int64_t number, std::vector<int64_t>& numbers) const {
    const size_t k = counts.size();
    int64_t s = 0;
    for (int c : counts) s += c;
    numbers[k - 1] = number;
    for (size_t i = k - 1; i >= 1; --i) {
      s -= counts[i];
      numbers[i - 1] = numbers[i] + choose_[i - 1][s];
    }
  }

 private:
  std::vector<std::vector<int64_t>> choose_;  // [i][s] = C(s + i, i)
};

// [count vector number × group order + g] = P(a word of `length` letters has these counts and product g).
std::vector<double> words_by_counts(const FiniteGroup& group, const std::vector<int>& generators, int64_t length) {
  const size_t order = size_t(group.order()), k = generators.size();
  const double letter = 1.0 / double(k);
  const CountVectorNumbers numbers(int64_t(k), length);
  // Both arrays hold the longest length from the start: refilling memory is much cheaper than new memory.
  std::vector<double> layer, longer;
  layer.reserve(size_t(numbers.count(length)) * order);
  longer.reserve(layer.capacity());
  layer.assign(order, 0.0);
  layer[group.identity()] = 1;  // the empty word
  std::vector<int64_t> longer_numbers(k);
  for (int64_t n = 0; n < length; ++n) {
    longer.assign(size_t(numbers.count(n + 1)) * order, 0.0);
    std::vector<int> counts = CountVectorNumbers::first(k, n);
    int64_t number = 0;
    do {
      numbers.one_letter_longer(counts, number, longer_numbers);
      const double* p = &layer[size_t(number++) * order];
      for (size_t j = 0; j < k; ++j) {
        double* q = &longer[size_t(longer_numbers[j]) * order];
        for (size_t g = 0; g < order; ++g) q[group.multiply(int(g), generators[j])] += p[g] * letter;
      }
    } while (CountVectorNumbers::next(counts));
    std::swap(layer, longer);
  }
  return layer;
}

}  // namespace

double count_only_decision_accuracy(const FiniteGroup& group, const std::vector<int>& generators, int64_t length,
                                    bool balanced) {
  check_within_limits(group, int64_t(generators.size()), length);
  const std::vector<double> layer = words_by_counts(group, generators, length);
  // Per count vector, the probabilities (under uniform words) of the two answers.
  const size_t order = size_t(group.order());
  std::vector<double> identity, other;
  for (size_t start = 0; start < layer.size(); start += order) {
    identity.push_back(layer[start + group.identity()]);
    other.push_back(0);
    for (size_t g = 0; g < order; ++g)
      if (int(g) != group.identity()) other.back() += layer[start + g];
  }
  double identity_total = 0, other_total = 0;
  for (size_t c = 0; c < identity.size(); ++c) identity_total += identity[c], other_total += other[c];
  if (balanced && (identity_total == 0 || other_total == 0)) return 1;
  // Balanced: each answer's words carry probability 1/2 in all, in proportion to their uniform probability.
  const double identity_weight = balanced ? 0.5 / identity_total : 1, other_weight = balanced ? 0.5 / other_total : 1;
  double accuracy = 0;
  for (size_t c = 0; c < identity.size(); ++c)
    accuracy += std::max(identity[c] * identity_weight, other[c] * other_weight);
  return accuracy;
}

}  // namespace pathbench
