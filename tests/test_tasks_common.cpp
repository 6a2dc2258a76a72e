// Properties every task shares: well-formed examples, determinism, independence of splits, seeds
// and indices, train/eval disjointness on small spaces, metric accumulators, and rejected configs.
#include <catch2/catch.hpp>
#include <omp.h>

#include <map>
#include <set>

#include "core/error.h"
#include "task_test_support.h"
#include "tasks/collate.h"
#include "tests/runner_fixture.h"
#include "tasks/holdout.h"

using namespace pathbench;
using pathbench::testing::make;

namespace {

// Small configs of every registered task (at least one each), for fast checks.
std::vector<json> small_configs() {
  return {{{"name", "flipflop"}, {"length", 64}},
          {{"name", "word_problem"}, {"group", "A5"}, {"train_max_length", 16}, {"eval_splits", {{"eval", {8, 32}}}}},
          {{"name", "word_problem"}, {"group", "S3"}, {"mode", "decision"}, {"train_min_length", 4}, {"eval_splits", {{"eval", {8}}}}},
          {{"name", "phonebook"}, {"train_min_entries", 2}, {"train_max_entries", 6}, {"eval_splits", {{"eval", {4, 12}}}}},
          {{"name", "mqrar"}, {"length", 160}}};
}

std::vector<int32_t> all_correct(const Example& e) { return e.targets; }

}  // namespace

TEST_CASE("the built-in tasks are registered, and every registered task has a small config", "[tasks]") {
  std::set<std::string> registered, small;
  for (const auto& info : task_registry()) registered.insert(info.name);
  for (const json& config : small_configs()) small.insert(config["name"].get<std::string>());
  for (const char* name : {"flipflop", "word_problem", "phonebook", "mqrar"}) {
    INFO(name);
    CHECK(registered.count(name) == 1);
  }
  for (const std::string& name : registered)
    if (small.count(name) == 0)
      FAIL_CHECK("task '" << name << "' has no small config: add one to small_configs() in "
                 "tests/test_tasks_common.cpp");
}

TEST_CASE("every registered task builds from defaults and yields well-formed examples", "[tasks]") {
  std::vector<json> configs = small_configs();
  for (const auto& info : task_registry()) configs.push_back({{"name", info.name}});
  for (const json& config : configs) {
    INFO(config.dump());
    const auto task = make(config);
    const int64_t V = task->vocabulary().size();
    for (const std::string& split : [&] { auto s = task->eval_splits(); s.push_back("train"); return s; }())
      for (uint64_t index = 0; index < 4; ++index) {
        const Example e = task->example(split, 9, index);
        const size_t L = e.tokens.size();
        REQUIRE(L > 0);
        REQUIRE(e.targets.size() == L);
        REQUIRE(e.loss_mask.size() == L);
        REQUIRE(e.score_mask.size() == L);
        bool in_range = true, scored_in_loss = true;
        for (size_t t = 0; t < L; ++t) {
          in_range = in_range && e.tokens[t] >= 0 && e.tokens[t] < V && e.targets[t] >= 0 && e.targets[t] < V;
          scored_in_loss = scored_in_loss && (!e.score_mask[t] || e.loss_mask[t]);
        }
        CHECK(in_range);
        CHECK(scored_in_loss);
        CHECK(std::count(e.score_mask.begin(), e.score_mask.end(), 1) > 0);
        CHECK(is_held_out(e) == (split != "train"));
      }
    CHECK_THROWS_WITH(task->example("nope", 0, 0), Catch::Contains("unknown split 'nope'"));
    CHECK_THROWS_WITH(task->metrics("nope"), Catch::Contains("unknown split 'nope'"));
  }
}

TEST_CASE("examples are pure functions of (config, split, seed, index) and differ across them", "[tasks]") {
  for (const json& config : small_configs()) {
    INFO(config.dump());
    const auto a = make(config), b = make(config);
    const std::string eval = a->eval_splits().front();
    for (uint64_t index = 0; index < 5; ++index) {
      const Example x = a->example("train", 3, index), y = b->example("train", 3, index);
      CHECK(x.tokens == y.tokens);
      CHECK(x.targets == y.targets);
      CHECK(x.loss_mask == y.loss_mask);
      CHECK(x.score_mask == y.score_mask);
      CHECK(x.group == y.group);
      CHECK(a->example(eval, 3, index).tokens == b->example(eval, 3, index).tokens);
    }
    std::set<std::vector<int32_t>> seen;
    int draws = 0;
    for (uint64_t seed = 0; seed < 3; ++seed)
      for (uint64_t index = 0; index < 10; ++index)
        for (const std::string& split : {std::string("train"), eval}) {
          seen.insert(a->example(split, seed, index).tokens);
          ++draws;
        }
    CHECK(int(seen.size()) == draws);
  }
}

TEST_CASE("training and evaluation share no example even in a small space", "[tasks]") {
  // Parity words of length 5: 32 sequences in all.
  const auto parity = make({{"name", "word_problem"}, {"group", "Z2"}, {"train_min_length", 5}, {"train_max_length", 5},
                            {"eval_splits", {{"a", {5}}, {"b", {5}}}}});
  std::set<std::vector<int32_t>> train, eval;
  for (uint64_t seed = 0; seed < 4; ++seed)
    for (uint64_t index = 0; index < 500; ++index) {
      train.insert(parity->example("train", seed, index).tokens);
      eval.insert(parity->example("a", seed, index).tokens);
      eval.insert(parity->example("b", seed, index).tokens);
    }
  CHECK_FALSE(train.empty());
  CHECK_FALSE(eval.empty());
  CHECK(train.size() + eval.size() == 32);  // every word is drawn, on exactly one side
  for (const auto& s : eval) CHECK(train.count(s) == 0);

  // Flip-flop of 8 tokens: w b x b x b r b with x ∈ {w, r, i}.
  const auto ffl = make({{"name", "flipflop"}, {"length", 8}, {"p", 0.4}});
  std::set<std::vector<int32_t>> ffl_train, ffl_eval;
  for (uint64_t index = 0; index < 3000; ++index) {
    ffl_train.insert(ffl->example("train", 0, index).targets);
    for (const auto& split : ffl->eval_splits()) ffl_eval.insert(ffl->example(split, 0, index).targets);
  }
  CHECK_FALSE(ffl_eval.empty());
  for (const auto& s : ffl_eval) CHECK(ffl_train.count(s) == 0);
}

TEST_CASE("drawing fails instead of sharing examples when a side of the partition is empty", "[tasks]") {
  Example only;
  only.tokens = {1, 2, 3};
  only.targets = {2, 3, 4};
  const bool held_out = is_held_out(only);
  CounterRng rng(1);
  auto draw = [&](CounterRng&) { return only; };
  const std::string side = held_out ? "eval" : "train", other = held_out ? "train" : "eval";
  CHECK(draw_for_split({0, side, 0, 0}, rng, draw, "here").tokens == only.tokens);
  CHECK_THROWS_WITH(draw_for_split({0, other, 0, 0}, rng, draw, "here"),
                    Catch::StartsWith("here:") && Catch::Contains("too small"));
}

TEST_CASE("a remembered held-out draw calls the draw function once", "[tasks]") {
  // Random four-token examples: about one draw in kHoldoutBuckets is held out, so the first draw of
  // an index usually takes several calls, and drawing it again must take exactly one.
  auto draw_counted = [](int& calls) {
    return [&calls](CounterRng& rng) {
      ++calls;
      Example e;
      for (int t = 0; t < 4; ++t) e.tokens.push_back(int32_t(rng.below(1000)));
      e.targets = e.tokens;
      return e;
    };
  };
  const uint64_t function = draw_function_id("counted draws", {{"test", "remembered held-out draw"}});
  const std::string split = "eval";
  int first_calls_total = 0;
  for (uint64_t index = 0; index < 20; ++index) {
    INFO("index " << index);
    int first_calls = 0, again_calls = 0;
    CounterRng first_rng(77, "index " + std::to_string(index)), again_rng(77, "index " + std::to_string(index));
    const Example first = draw_for_split({function, split, 77, index}, first_rng, draw_counted(first_calls), "test");
    const Example again = draw_for_split({function, split, 77, index}, again_rng, draw_counted(again_calls), "test");
    CHECK(again_calls == 1);
    CHECK(again.tokens == first.tokens);
    first_calls_total += first_calls;
  }
  CHECK(first_calls_total > 20);  // the first draws did need the long way
}

TEST_CASE("a held-out example drawn again starts from its remembered draw and is the same example", "[tasks]") {
  const uint64_t seed = 918273645;  // a seed no other test draws, so the first pass finds nothing remembered
  // One option changed per task: another draw function, whose examples are remembered apart.
  const std::map<std::string, json> changes = {{"flipflop", {{"p", 0.5}}},
                                               {"word_problem", {{"train_max_length", 20}}},
                                               {"phonebook", {{"train_max_entries", 7}}},
                                               {"mqrar", {{"length", 200}}}};
  for (const json& config : small_configs()) {
    INFO(config.dump());
    const std::string name = config["name"];
    const auto change = changes.find(name);
    if (change == changes.end()) {
      FAIL_CHECK("task '" << name << "' has no option to change here: add one to `changes` above");
      continue;
    }
    json other = config;
    other.merge_patch(change->second);
    // (Building a task draws a probe example of each split, so all three are built before counting.)
    const auto first_task = make(config), again = make(config), different = make(other);
    const std::string split = first_task->eval_splits().front();
    const size_t before = held_out_starts_remembered();
    std::vector<Example> first;
    for (uint64_t i = 0; i < 40; ++i) first.push_back(first_task->example(split, seed, i));
    CHECK(held_out_starts_remembered() == before + 40);
    for (uint64_t i = 0; i < 40; ++i) first_task->example("train", seed, i);
    CHECK(held_out_starts_remembered() == before + 40);  // training draws are not remembered
    // A task built again from the same config draws from the remembered starts: nothing new is
    // remembered, and every example is the one drawn the long way.
    for (uint64_t i = 0; i < 40; ++i) {
      const Example e = again->example(split, seed, i);
      CHECK(e.tokens == first[i].tokens);
      CHECK(e.targets == first[i].targets);
      CHECK(e.score_mask == first[i].score_mask);
    }
    CHECK(held_out_starts_remembered() == before + 40);
    different->example(split, seed, 0);
    CHECK(held_out_starts_remembered() == before + 41);
  }
}

TEST_CASE("metric accumulators score hand-made predictions", "[tasks]") {
  SECTION("flip-flop: perfect, one wrong read bit, unscored mistakes ignored") {
    const auto task = make({{"name", "flipflop"}, {"length", 64}});
    auto m = task->metrics("in_dist");
    CHECK(m->result()["error_rate"].is_null());
    int64_t scored = 0;
    for (uint64_t i = 0; i < 10; ++i) {
      const Example e = task->example("in_dist", 0, i);
      scored += std::count(e.score_mask.begin(), e.score_mask.end(), 1);
      std::vector<int32_t> p = all_correct(e);
      for (size_t t = 0; t < p.size(); ++t)
        if (!e.score_mask[t]) p[t] = 0;  // wrong where nothing is scored
      if (i == 3)
        for (size_t t = 0; t < p.size(); ++t)
          if (e.score_mask[t]) {
            p[t] = e.targets[t] == 3 ? 4 : 3;  // flip the first read bit
            break;
          }
      m->add(e, p);
    }
    const json r = m->result();
    CHECK(r["scored"] == scored);
    CHECK(r["errors"] == 1);
    CHECK(r["error_rate"].get<double>() == Approx(1.0 / scored));
    auto perfect = task->metrics("in_dist");
    for (uint64_t i = 0; i < 10; ++i) perfect->add(task->example("in_dist", 0, i), all_correct(task->example("in_dist", 0, i)));
    CHECK(perfect->result()["error_rate"].get<double>() == 0.0);
    CHECK(perfect->result()["scored"] == scored);
    CHECK(task->primary_metric() == "error_rate");
    CHECK_FALSE(task->higher_is_better());
  }
  SECTION("phonebook: one wrong digit is not an exact match; per book size") {
    const auto task = make({{"name", "phonebook"}, {"number_digits", 4}, {"eval_splits", {{"eval", {3, 5}}}}});
    auto m = task->metrics("eval");
    const Example a = task->example("eval", 0, 0), b = task->example("eval", 0, 1);
    REQUIRE(a.group == 3);
    REQUIRE(b.group == 5);
    m->add(a, all_correct(a));
    std::vector<int32_t> p = all_correct(b);
    p[p.size() - 2] = p[p.size() - 2] == 4 ? 5 : 4;  // a wrong digit
    m->add(b, p);
    const json r = m->result();
    CHECK(r["exact_match"].get<double>() == Approx(0.5));
    CHECK(r["digit_accuracy"].get<double>() == Approx(7.0 / 8));
    CHECK(r["per_book_size"]["3"]["exact_match"].get<double>() == Approx(1.0));
    CHECK(r["per_book_size"]["5"]["exact_match"].get<double>() == Approx(0.0));
    CHECK(r["per_book_size"]["5"]["digit_accuracy"].get<double>() == Approx(0.75));
    CHECK(r.contains(task->primary_metric()));
  }
  SECTION("word problem: token and sequence accuracy per length") {
    const auto task = make({{"name", "word_problem"}, {"group", "S3"}, {"eval_splits", {{"eval", {4, 10}}}}});
    auto m = task->metrics("eval");
    for (uint64_t i = 0; i < 4; ++i) {
      const Example e = task->example("eval", 0, i);
      std::vector<int32_t> p = all_correct(e);
      if (e.group == 10 && i == 1) p[1] = (p[1] + 1) % 6;  // position 0 is the unscored <bos>
      m->add(e, p);
    }
    const json r = m->result();
    CHECK(r["per_length"]["4"]["sequence_accuracy"].get<double>() == Approx(1.0));
    CHECK(r["per_length"]["10"]["sequence_accuracy"].get<double>() == Approx(0.5));
    CHECK(r["per_length"]["10"]["token_accuracy"].get<double>() == Approx(19.0 / 20));
    CHECK(r["sequence_accuracy"].get<double>() == Approx(0.75));
    CHECK(r["scored"] == 28);
  }
  SECTION("MQRAR: accuracy at the queries") {
    const auto task = make({{"name", "mqrar"}, {"length", 160}, {"queries", 4}});
    auto m = task->metrics("eval");
    const Example e = task->example("eval", 0, 0);
    std::vector<int32_t> p = all_correct(e);
    for (size_t t = 0, wrong = 0; t < p.size() && wrong < 1; ++t)
      if (e.score_mask[t]) p[t] = 0, ++wrong;
    m->add(e, p);
    CHECK(m->result()["accuracy"].get<double>() == Approx(0.75));
    CHECK(m->result()["sequence_accuracy"].get<double>() == Approx(0.0));
  }
  SECTION("predictions of the wrong length are an error") {
    const auto task = make({{"name", "mqrar"}, {"length", 160}});
    auto m = task->metrics("eval");
    const Example e = task->example("eval", 0, 0);
    CHECK_THROWS_AS(m->add(e, std::vector<int32_t>(3, 0)), Error);
  }
}

TEST_CASE("invalid task configs are rejected naming the key and value", "[tasks]") {
  auto rejected = [](const json& config, const std::string& key, const std::string& value) {
    INFO(config.dump());
    CHECK_THROWS_WITH(make(config), Catch::StartsWith("test config") && Catch::Contains("'" + key + "'") &&
                                        Catch::Contains(value));
  };
  rejected({{"name", "nothing"}}, "name", "nothing");
  rejected({{"name", "flipflop"}, {"colour", 1}}, "colour", "colour");
  // Flip-flop: p outside [0, 1), lengths too short or odd, bad eval splits.
  rejected({{"name", "flipflop"}, {"p", 1.0}}, "p", "1.0");
  rejected({{"name", "flipflop"}, {"p", -0.1}}, "p", "-0.1");
  rejected({{"name", "flipflop"}, {"length", 2}}, "length", "2");
  rejected({{"name", "flipflop"}, {"length", 101}}, "length", "101");
  rejected({{"name", "flipflop"}, {"eval_splits", {{"x", 1.5}}}}, "eval_splits", "1.5");
  rejected({{"name", "flipflop"}, {"eval_splits", {{"train", 0.5}}}}, "eval_splits", "train");
  rejected({{"name", "flipflop"}, {"eval_splits", json::object()}}, "eval_splits", "{}");
  // Word problems: unknown group, non-elements, lengths.
  rejected({{"name", "word_problem"}, {"group", "Q8"}}, "group", "Q8");
  rejected({{"name", "word_problem"}, {"group", "Z1"}}, "group", "Z1");
  rejected({{"name", "word_problem"}, {"generators", {"(0 1)"}}}, "generators", "(0 1)");
  rejected({{"name", "word_problem"}, {"generators", {"(0 1 2)", "12034"}}}, "generators", "12034");
  rejected({{"name", "word_problem"}, {"generators", {"(0 1 2)"}}}, "generators", "one element");
  rejected({{"name", "word_problem"}, {"mode", "guess"}}, "mode", "guess");
  rejected({{"name", "word_problem"}, {"train_min_length", 0}}, "train_min_length", "0");
  rejected({{"name", "word_problem"}, {"train_min_length", 9}, {"train_max_length", 8}}, "train_max_length", "8");
  rejected({{"name", "word_problem"}, {"eval_splits", {{"e", {4, 0}}}}}, "eval_splits", "[4,0]");
  // Phonebook: more names than the syllable tables can make unique.
  rejected({{"name", "phonebook"}, {"name_syllables", 1}, {"train_max_entries", 81}}, "train_max_entries", "81");
  rejected({{"name", "phonebook"}, {"name_syllables", 1}, {"train_max_entries", 10}, {"eval_splits", {{"e", {100}}}}},
           "eval_splits", "100");
  rejected({{"name", "phonebook"}, {"name_syllables", 9}}, "name_syllables", "9");
  rejected({{"name", "phonebook"}, {"curriculum_examples", -1}}, "curriculum_examples", "-1");
  rejected({{"name", "word_problem"}, {"curriculum_examples", int64_t(1) << 41}}, "curriculum_examples", "2199023255552");
  rejected({{"name", "phonebook"}, {"train_min_entries", 9}, {"train_max_entries", 8}}, "train_max_entries", "8");
  // MQRAR: N < 1, N beyond the repetitions, lengths too short, keys beyond the vocabulary.
  rejected({{"name", "mqrar"}, {"n_back", 0}}, "n_back", "0");
  rejected({{"name", "mqrar"}, {"n_back", 5}, {"min_assignments", 5}}, "n_back", "5");
  rejected({{"name", "mqrar"}, {"length", 70}}, "length", "70");
  rejected({{"name", "mqrar"}, {"keys", 40}, {"pairs", 64}}, "keys", "40");
  rejected({{"name", "mqrar"}, {"keys", 16}, {"pairs", 8}, {"n_back", 1}}, "pairs", "8");
  rejected({{"name", "mqrar"}, {"min_assignments", 1}}, "min_assignments", "1");
  rejected({{"name", "mqrar"}, {"loss", "most"}}, "loss", "most");
}

TEST_CASE("examples drawn in parallel are the examples drawn one by one, whatever the thread count", "[tasks]") {
  const auto task = make({{"name", "flipflop"}, {"length", 16}});
  const int threads_before = omp_get_max_threads();
  for (int threads : {1, 3}) {
    INFO("threads " << threads);
    omp_set_num_threads(threads);
    for (const std::string split : {"train", "sparse"}) {
      const std::vector<Example> drawn = draw_examples(*task, split, 7, 100, 37);
      REQUIRE(drawn.size() == 37);
      for (int64_t i = 0; i < 37; ++i) {
        const Example one = task->example(split, 7, uint64_t(100 + i));
        CHECK(drawn[size_t(i)].tokens == one.tokens);
        CHECK(drawn[size_t(i)].targets == one.targets);
        CHECK(drawn[size_t(i)].score_mask == one.score_mask);
      }
    }
  }
  // A draw that throws (an unknown split) surfaces as that error, after the parallel loop; of several
  // failing draws, always the first one's.
  CHECK_THROWS_WITH(draw_examples(*task, "nonexistent", 0, 0, 20), Catch::Contains("nonexistent"));
  const auto failing = testing::fixture_tasks().make({{"name", "parity"}, {"fail_at_example", 5}}, "test");
  for (int repeat = 0; repeat < 5; ++repeat)
    CHECK_THROWS_WITH(draw_examples(*failing, "train", 0, 0, 64), Catch::Contains("at example 5"));
  omp_set_num_threads(threads_before);
}
