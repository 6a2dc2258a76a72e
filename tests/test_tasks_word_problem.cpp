// Word problems: prefix-product labels recomputed by composing permutations (independently of the
// multiplication table), the identity decision, balance, and lengths per split.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "task_test_support.h"
#include "tasks/groups.h"

using namespace pathbench;
using pathbench::testing::make;

TEST_CASE("word problem tagging labels are prefix products of the permutations", "[tasks]") {
  for (const std::string name : {"A5", "S5", "A4xZ5", "Z60", "S3", "Z2"}) {
    INFO(name);
    const FiniteGroup G = FiniteGroup::from_name(name, "test");
    const auto task = make({{"name", "word_problem"}, {"group", name}, {"train_max_length", 24}});
    REQUIRE(task->vocabulary().size() == G.order() + 1);
    REQUIRE(task->vocabulary().symbols.back() == "<bos>");
    for (const std::string split : {"train", "longer"})
      for (uint64_t index = 0; index < 20; ++index) {
        const Example e = task->example(split, 1, index);
        CHECK(e.group == int64_t(e.tokens.size()) - 1);
        CHECK(e.tokens[0] == G.order());  // <bos>, unscored
        CHECK(e.loss_mask[0] == 0);
        Permutation prefix = identity_permutation(G.degree());
        bool labels_right = true;
        for (size_t t = 1; t < e.tokens.size(); ++t) {
          REQUIRE(task->vocabulary().symbols[e.tokens[t]] == G.symbol(e.tokens[t]));
          prefix = compose(prefix, G.permutation(e.tokens[t]));
          labels_right = labels_right && G.permutation(e.targets[t]) == prefix;
        }
        CHECK(labels_right);
        CHECK(std::count(e.score_mask.begin(), e.score_mask.end(), 1) == int64_t(e.tokens.size()) - 1);
        CHECK(e.loss_mask == e.score_mask);
      }
  }
}

TEST_CASE("word problem without bos is the bare word", "[tasks]") {
  const auto task = make({{"name", "word_problem"}, {"group", "S3"}, {"bos", false}});
  CHECK(task->vocabulary().size() == 6);
  const Example e = task->example("train", 0, 3);
  CHECK(int64_t(e.tokens.size()) == e.group);
  CHECK(e.targets[0] == e.tokens[0]);  // the first prefix product is the first letter
  CHECK(std::count(e.score_mask.begin(), e.score_mask.end(), 1) == e.group);
}

TEST_CASE("word problem training lengths cover the range, eval splits cycle through their lengths", "[tasks]") {
  const auto task = make({{"name", "word_problem"}, {"group", "S3"}, {"train_min_length", 3}, {"train_max_length", 7},
                          {"eval_splits", {{"short", {2, 5}}, {"long", {40}}}}});
  CHECK(task->eval_splits() == std::vector<std::string>{"long", "short"});
  std::set<int64_t> lengths;
  for (uint64_t index = 0; index < 200; ++index) lengths.insert(task->example("train", 0, index).group);
  CHECK(lengths == std::set<int64_t>{3, 4, 5, 6, 7});
  for (uint64_t index = 0; index < 6; ++index) {
    CHECK(task->example("short", 4, index).group == (index % 2 ? 5 : 2));
    CHECK(task->example("short", 4, index).tokens.size() == (index % 2 ? 6u : 3u));  // <bos> + word
    CHECK(task->example("long", 4, index).group == 40);
  }
}

TEST_CASE("a length curriculum grows the longest training word with the example index, then covers the range",
          "[tasks]") {
  const json base = {{"name", "word_problem"}, {"group", "A5"}, {"train_min_length", 2}, {"train_max_length", 20}};
  json ramped = base;
  ramped["curriculum_examples"] = 1000;
  const auto plain = make(base), curriculum = make(ramped);
  std::set<int64_t> late;
  int64_t longest_early = 0, longest_near_end = 0;
  for (uint64_t index = 0; index < 1400; ++index) {
    const int64_t length = curriculum->example("train", 0, index).group;
    INFO("index " << index);
    CHECK(length >= 2);
    if (index < 1000) CHECK(length <= 2 + int64_t(18 * index / 1000));  // the largest length so far
    if (index < 56) longest_early = std::max(longest_early, length);
    if (index >= 900 && index < 1000) longest_near_end = std::max(longest_near_end, length);
    if (index >= 1000) late.insert(length);
  }
  CHECK(longest_early == 2);
  CHECK(longest_near_end >= 16);
  CHECK(late.size() >= 17);  // after the curriculum: every length of 2..20, or nearly
  // evaluation splits do not follow it, and curriculum_examples 0 is the plain task
  CHECK(curriculum->example("in_dist", 0, 0).tokens == plain->example("in_dist", 0, 0).tokens);
  json off = base;
  off["curriculum_examples"] = 0;
  const auto zero = make(off);
  for (uint64_t index = 0; index < 50; ++index)
    CHECK(zero->example("train", 3, index).tokens == plain->example("train", 3, index).tokens);
}

TEST_CASE("word problem decision answers whether the word composes to the identity", "[tasks]") {
  const std::vector<std::string> gens = {"(0 1 2)", "(0 2 1)", "(1 2 3)", "(1 3 2)", "(2 3 4)", "(2 4 3)"};
  const FiniteGroup a5 = FiniteGroup::from_name("A5", "test");
  const auto task = make({{"name", "word_problem"}, {"mode", "decision"}, {"generators", gens},
                          {"train_min_length", 1}, {"train_max_length", 12}, {"eval_splits", {{"eval", {2, 9, 30}}}}});
  const auto& symbols = task->vocabulary().symbols;
  REQUIRE(task->vocabulary().size() == 10);  // 6 generators, ?, no, yes, <bos>
  CHECK(symbols[6] == "?");
  int yes = 0, total = 0;
  for (const std::string split : {"train", "eval"})
    for (uint64_t index = 0; index < 400; ++index) {
      const Example e = task->example(split, 2, index);
      const size_t L = e.tokens.size() - 1;  // position of "?"
      REQUIRE(int64_t(L) == e.group + 1);
      CHECK(symbols[e.tokens[0]] == "<bos>");
      CHECK(symbols[e.tokens[L]] == "?");
      Permutation p = identity_permutation(5);
      for (size_t t = 1; t < L; ++t) {
        REQUIRE(e.tokens[t] < 6);
        p = compose(p, a5.permutation(*a5.parse_element(gens[e.tokens[t]])));
      }
      const bool identity = p == identity_permutation(5);
      CHECK(symbols[e.targets[L]] == (identity ? "yes" : "no"));
      CHECK(std::count(e.score_mask.begin(), e.score_mask.end(), 1) == 1);
      CHECK(e.score_mask[L] == 1);
      CHECK(e.loss_mask == e.score_mask);
      if (e.group == 1) CHECK_FALSE(identity);  // no generator is the identity: only "no" is possible
      if (e.group >= 2) {
        yes += identity;
        ++total;
      }
    }
  CHECK(double(yes) / total == Approx(0.5).margin(0.06));
}

TEST_CASE("word problem decision without balance follows the natural answer frequency", "[tasks]") {
  const auto task = make({{"name", "word_problem"}, {"group", "S3"}, {"mode", "decision"}, {"balanced", false},
                          {"train_min_length", 6}, {"train_max_length", 6}});
  int yes = 0;
  for (uint64_t index = 0; index < 1200; ++index) {
    const Example e = task->example("train", 0, index);
    yes += task->vocabulary().symbols[e.targets.back()] == "yes";
  }
  CHECK(yes / 1200.0 == Approx(1.0 / 6).margin(0.04));
}

TEST_CASE("word problem decision keeps forced answers where only one occurs", "[tasks]") {
  // Words of transpositions of S3 are odd permutations at odd lengths, so never the identity there;
  // at even lengths both answers occur, also far beyond the period of the reachable sets.
  const auto task = make({{"name", "word_problem"}, {"group", "S3"}, {"mode", "decision"},
                          {"generators", {"(0 1)", "(1 2)", "(0 2)"}}, {"train_min_length", 1}, {"train_max_length", 6},
                          {"eval_splits", {{"long", {101, 1000}}}}});
  const auto& symbols = task->vocabulary().symbols;
  int even = 0, even_yes = 0;
  for (const std::string split : {"train", "long"})
    for (uint64_t index = 0; index < 200; ++index) {
      const Example e = task->example(split, 0, index);
      const bool yes = symbols[e.targets.back()] == "yes";
      if (e.group % 2) {
        CHECK_FALSE(yes);
      } else {
        ++even;
        even_yes += yes;
      }
    }
  CHECK(double(even_yes) / even == Approx(0.5).margin(0.1));
}
