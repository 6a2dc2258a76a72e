// The examples every task draws are pinned: a fingerprint of the first examples of every split of
// each task config below must not change. Results folders gather runs made at different commits
// (a sweep extended by more seeds, a run resumed after an update), which are only comparable if
// they trained and were scored on the same data. A change that alters any example (its tokens,
// targets or masks, or which draw is accepted for a split) fails here; if it is intended, results
// made before it must not be mixed with results made after, and the fingerprints are updated.
// Every registered task has configs here.
#include <catch2/catch.hpp>

#include <set>

#include "core/rng.h"
#include "task_test_support.h"
#include "tasks/holdout.h"

using namespace pathbench;
using pathbench::testing::make;

namespace {

// Over the splits (train first, then the eval splits in order), seeds 0 and 7, indices 0–15.
uint64_t fingerprint(const Task& task) {
  std::vector<std::string> splits{"train"};
  for (const auto& s : task.eval_splits()) splits.push_back(s);
  uint64_t h = hash_string("pinned examples");
  for (const std::string& split : splits)
    for (uint64_t seed : {0, 7})
      for (uint64_t index = 0; index < 16; ++index) {
        const Example e = task.example(split, seed, index);
        h = combine_key(h, content_hash(e));
        for (size_t t = 0; t < e.tokens.size(); ++t)
          h = combine_key(h, uint64_t(e.loss_mask[t]) | uint64_t(e.score_mask[t]) << 1);
        h = combine_key(h, uint64_t(e.group));
      }
  return h;
}

}  // namespace

TEST_CASE("the examples of every task are pinned", "[tasks]") {
  const std::vector<std::pair<json, uint64_t>> pinned = {
      {{{"name", "flipflop"}}, 0x73011291fe61645aULL},
      {{{"name", "flipflop"}, {"length", 64}, {"loss", "scored"}}, 0xd8ebf35639e19ca3ULL},
      {{{"name", "word_problem"}}, 0xfb91879fc32443a5ULL},
      {{{"name", "word_problem"}, {"group", "A5"}, {"train_min_length", 16}, {"train_max_length", 16},
        {"eval_splits", {{"short", {4, 8}}, {"in_dist", {16}}}}}, 0x0bc21a1fd66391b4ULL},
      {{{"name", "word_problem"}, {"group", "A5"}, {"mode", "decision"}, {"balanced", true},
        {"generators", {"(0 1 2)", "(0 2 1)", "(0 1 3)", "(0 3 1)", "(0 1 4)", "(0 4 1)"}}}, 0x5b1bd4970155e6d8ULL},
      {{{"name", "word_problem"}, {"group", "A5"}, {"train_max_length", 16}, {"curriculum_examples", 1000}}, 0x1fad9a76329f90e7ULL},
      {{{"name", "phonebook"}}, 0x37a8b55ad2986813ULL},
      {{{"name", "mqrar"}}, 0x2b2756bf8aa56e5eULL},
      {{{"name", "mqrar"}, {"n_back", 3}, {"pairs", 32}, {"keys", 4}, {"min_assignments", 5}}, 0xf6c5714e711fdc91ULL},
  };
  std::set<std::string> pinned_tasks;
  for (const auto& [config, expected] : pinned) {
    INFO(config.dump());
    CHECK(fingerprint(*make(config)) == expected);
    pinned_tasks.insert(config["name"].get<std::string>());
  }
  for (const TaskInfo& info : task_registry())
    if (pinned_tasks.count(info.name) == 0)
      FAIL_CHECK("task '" << info.name << "' has no pinned examples: add configs of it to `pinned` above (with "
                 "fingerprint 0 the check fails and prints the actual one)");
}
