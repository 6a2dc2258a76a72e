// Flip-flop: labels recomputed by a scan, instruction frequencies, the BOS layout and loss option.
#include <catch2/catch.hpp>

#include "task_test_support.h"

using namespace pathbench;
using pathbench::testing::make;

namespace {

int32_t id(const Task& task, const std::string& symbol) {
  const auto& s = task.vocabulary().symbols;
  return int32_t(std::find(s.begin(), s.end(), symbol) - s.begin());
}

}  // namespace

TEST_CASE("flip-flop read bits equal the last written bit, found by a scan", "[tasks]") {
  const auto task = make({{"name", "flipflop"}, {"length", 128}});
  const int32_t w = id(*task, "w"), r = id(*task, "r"), i = id(*task, "i"), zero = id(*task, "0"), one = id(*task, "1");
  for (const std::string split : {"train", "in_dist", "sparse", "dense"})
    for (uint64_t index = 0; index < 40; ++index) {
      const Example e = task->example(split, 3, index);
      REQUIRE(e.tokens.size() == 128);
      CHECK(testing::is_shifted_by_one(e, id(*task, "<bos>")));
      const auto& s = e.targets;  // the whole FFL sequence
      CHECK(s.front() == w);
      CHECK(s[126] == r);
      int32_t memory = -1;
      int reads = 0;
      for (size_t t = 0; t < s.size(); t += 2) {
        REQUIRE((s[t] == w || s[t] == r || s[t] == i));
        REQUIRE((s[t + 1] == zero || s[t + 1] == one));
        if (s[t] == w) memory = s[t + 1];
        if (s[t] == r) {
          CHECK(s[t + 1] == memory);
          ++reads;
        }
        // Scored: exactly the bits after r (whose input token is r).
        CHECK(e.score_mask[t] == 0);
        CHECK(e.score_mask[t + 1] == (s[t] == r ? 1 : 0));
        CHECK((e.tokens[t + 1] == r) == bool(e.score_mask[t + 1]));
      }
      CHECK(reads >= 1);
      CHECK(std::count(e.loss_mask.begin(), e.loss_mask.end(), 1) == 128);  // loss "all" by default
    }
}

TEST_CASE("flip-flop instruction frequencies match p", "[tasks]") {
  const auto task = make({{"name", "flipflop"}, {"length", 512}, {"p", 0.8}});
  const int32_t w = id(*task, "w"), r = id(*task, "r"), i = id(*task, "i");
  for (const auto& [split, p] : std::vector<std::pair<std::string, double>>{{"train", 0.8}, {"dense", 0.1}, {"sparse", 0.98}}) {
    INFO(split);
    double counts[3] = {0, 0, 0};
    double total = 0;
    for (uint64_t index = 0; index < 200; ++index) {
      const Example e = task->example(split, 0, index);
      for (size_t t = 2; t + 2 < e.targets.size(); t += 2) {  // the free instructions (not the first w, last r)
        counts[0] += e.targets[t] == i;
        counts[1] += e.targets[t] == w;
        counts[2] += e.targets[t] == r;
        ++total;
      }
    }
    CHECK(counts[0] / total == Approx(p).margin(0.01));
    CHECK(counts[1] / total == Approx((1 - p) / 2).margin(0.01));
    CHECK(counts[2] / total == Approx((1 - p) / 2).margin(0.01));
  }
}

TEST_CASE("flip-flop loss 'scored' restricts the loss to the read bits", "[tasks]") {
  const auto task = make({{"name", "flipflop"}, {"length", 64}, {"loss", "scored"}, {"eval_splits", {{"mine", 0.5}}}});
  CHECK(task->eval_splits() == std::vector<std::string>{"mine"});
  for (uint64_t index = 0; index < 10; ++index) {
    const Example e = task->example("mine", 0, index);
    CHECK(e.loss_mask == e.score_mask);
  }
}
