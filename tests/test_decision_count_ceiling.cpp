// The count-only accuracy of decision word problems against brute force over every word, on
// abelian groups (where the counts decide the answer), where only one answer occurs, and its limits.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "tasks/decision_count_ceiling.h"
#include "tasks/groups.h"
#include "tasks/word_generators.h"

using namespace pathbench;

namespace {

struct Answers {
  long double identity = 0, other = 0;  // words with these counts that equal the identity, that do not
};

// Every word of `length` letters over the generators, its product composed from the permutations,
// tallied by how often each generator occurs.
std::map<std::vector<int>, Answers> answers_by_counts(const FiniteGroup& group, const std::vector<int>& generators,
                                                      int length) {
  std::map<std::vector<int>, Answers> tally;
  const int64_t k = int64_t(generators.size());
  int64_t words = 1;
  for (int i = 0; i < length; ++i) words *= k;
  for (int64_t word = 0; word < words; ++word) {
    std::vector<int> counts(k, 0);
    Permutation product = identity_permutation(group.degree());
    for (int64_t rest = word, i = 0; i < length; ++i, rest /= k) {
      ++counts[rest % k];
      product = compose(product, group.permutation(generators[rest % k]));
    }
    Answers& a = tally[counts];
    (product == identity_permutation(group.degree()) ? a.identity : a.other) += 1;
  }
  return tally;
}

// The best accuracy from the counts, with uniform words or with each answer's words weighted to 1/2.
long double brute_force_accuracy(const std::map<std::vector<int>, Answers>& tally, bool balanced) {
  long double identity_words = 0, other_words = 0;
  for (const auto& [counts, a] : tally) identity_words += a.identity, other_words += a.other;
  if (balanced && (identity_words == 0 || other_words == 0)) return 1;
  long double best = 0;
  for (const auto& [counts, a] : tally)
    best += balanced ? std::max(a.identity / (2 * identity_words), a.other / (2 * other_words))
                     : std::max(a.identity, a.other) / (identity_words + other_words);
  return best;
}

std::vector<int> generators_of(const FiniteGroup& group, const json& list) {
  return parse_word_generators(group, list, "test");
}

}  // namespace

TEST_CASE("count-only accuracy matches brute force over every word", "[tasks]") {
  const std::vector<std::pair<std::string, json>> cases = {
      {"A5", {"(0 1 2)", "(0 2 1)", "(0 1 3)", "(0 3 1)", "(0 1 4)", "(0 4 1)"}},
      {"S3", json::array()},
      {"A4xZ5", {"(0 1 2)", "(1 2 3)", "(0 1)(2 3)", "(4 5 6 7 8)"}}};
  for (const auto& [name, list] : cases) {
    const FiniteGroup group = FiniteGroup::from_name(name, "test");
    const std::vector<int> generators = generators_of(group, list);
    for (int length = 1; length <= 6; ++length) {
      const auto tally = answers_by_counts(group, generators, length);
      for (bool balanced : {true, false}) {
        INFO(name << " with " << generators.size() << " generators, length " << length << ", balanced " << balanced);
        const double computed = count_only_decision_accuracy(group, generators, length, balanced);
        CHECK(std::abs(computed - double(brute_force_accuracy(tally, balanced))) <= 1e-12);
      }
    }
  }
}

TEST_CASE("count-only accuracy is 1 on abelian groups, whose product the counts decide", "[tasks]") {
  const std::vector<std::pair<std::string, json>> cases = {{"Z60", {"1", "7", "30", "45"}}, {"Z6", json::array()}};
  for (const auto& [name, list] : cases) {
    const FiniteGroup group = FiniteGroup::from_name(name, "test");
    for (int length = 1; length <= 12; ++length)
      for (bool balanced : {true, false}) {
        INFO(name << ", length " << length << ", balanced " << balanced);
        CHECK(count_only_decision_accuracy(group, generators_of(group, list), length, balanced) ==
              Approx(1).epsilon(0).margin(1e-12));
      }
  }
}

TEST_CASE("balanced count-only accuracy is 1 where only one answer occurs", "[tasks]") {
  // No 3-cycle is the identity; a word of an odd number of transpositions is an odd permutation.
  const FiniteGroup a5 = FiniteGroup::from_name("A5", "test"), s3 = FiniteGroup::from_name("S3", "test");
  CHECK(count_only_decision_accuracy(a5, generators_of(a5, {"(0 1 2)", "(0 2 1)", "(0 1 3)"}), 1, true) == 1);
  CHECK(count_only_decision_accuracy(s3, generators_of(s3, {"(0 1)", "(1 2)", "(0 2)"}), 3, true) == 1);
}

TEST_CASE("count-only accuracy refuses lengths beyond its limits, naming the length", "[tasks]") {
  const FiniteGroup a5 = FiniteGroup::from_name("A5", "test");
  const auto three_cycles = generators_of(a5, {"(0 1 2)", "(0 2 1)", "(0 1 3)", "(0 3 1)", "(0 1 4)", "(0 4 1)"});
  // 11,238,513 count vectors × 60 elements at one length.
  CHECK_THROWS_WITH(count_only_decision_accuracy(a5, three_cycles, 64, true),
                    Catch::Contains("length 64") && Catch::Contains("count vectors"));
  // Few count vectors at each length, but about 5·10⁹ of them up to it.
  CHECK_THROWS_AS(count_only_decision_accuracy(a5, generators_of(a5, {"(0 1 2)", "(0 2 1)"}), 100000, false), Error);
}
