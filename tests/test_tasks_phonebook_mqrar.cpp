// Phonebook answers found by scanning the book text; MQRAR answers found by replaying the
// assignments.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <sstream>

#include "task_test_support.h"

using namespace pathbench;
using pathbench::testing::make;

TEST_CASE("phonebook answers are the queried name's number in the book text", "[tasks]") {
  const auto task = make({{"name", "phonebook"}, {"name_syllables", 2}, {"number_digits", 5}, {"train_min_entries", 1},
                          {"train_max_entries", 40}, {"eval_splits", {{"big", {200}}}}});
  CHECK(task->vocabulary().separator.empty());
  for (const std::string split : {"train", "big"})
    for (uint64_t index = 0; index < 30; ++index) {
      const Example e = task->example(split, 5, index);
      CHECK(testing::is_shifted_by_one(e, 0));
      std::istringstream text(testing::target_text(*task, e));
      std::map<std::string, std::string> book;
      std::string line, query_name, query_number;
      while (std::getline(text, line)) {
        const size_t colon = line.find(':');
        REQUIRE(colon != std::string::npos);
        if (line[0] == '?') {
          query_name = line.substr(1, colon - 1);
          query_number = line.substr(colon + 1);
          continue;
        }
        const std::string name = line.substr(0, colon), number = line.substr(colon + 1);
        CHECK(name.size() == 4);
        CHECK(number.size() == 5);
        CHECK(book.count(name) == 0);  // no duplicate names
        book[name] = number;
      }
      CHECK(int64_t(book.size()) == e.group);
      if (split == "big") CHECK(e.group == 200);
      REQUIRE(book.count(query_name) == 1);
      CHECK(query_number == book[query_name]);
      // The scored targets are exactly the answer's digits, at the end.
      std::string scored;
      for (size_t t = 0; t < e.targets.size(); ++t)
        if (e.score_mask[t]) scored += task->vocabulary().symbols[e.targets[t]];
      CHECK(scored == book[query_name]);
      CHECK(std::equal(e.score_mask.end() - 5, e.score_mask.end(), std::vector<uint8_t>(5, 1).begin()));
      CHECK(e.loss_mask == e.score_mask);  // loss "scored" by default
    }
}

TEST_CASE("phonebook can fill a book with every distinct name", "[tasks]") {
  const auto task = make({{"name", "phonebook"}, {"name_syllables", 1}, {"train_min_entries", 80}, {"train_max_entries", 80},
                          {"eval_splits", {{"all", {80}}}}});
  const Example e = task->example("all", 0, 0);
  std::set<std::string> names;
  std::istringstream text(testing::target_text(*task, e));
  std::string line;
  while (std::getline(text, line))
    if (line[0] != '?') names.insert(line.substr(0, line.find(':')));
  CHECK(names.size() == 80);
}

TEST_CASE("MQRAR answers are the N-th most recent values, found by replaying the assignments", "[tasks]") {
  for (int n_back = 1; n_back <= 4; ++n_back) {
    INFO("n_back " << n_back);
    const auto task = make({{"name", "mqrar"}, {"n_back", n_back}, {"pairs", 32}, {"keys", 4}, {"min_assignments", 5},
                            {"length", 256}});
    const auto& symbols = task->vocabulary().symbols;
    std::set<size_t> counts_seen, first_ranks;  // assignments per key; the answer's rank from the key's first
    for (const std::string split : {"train", "eval"})
      for (uint64_t index = 0; index < 15; ++index) {
        const Example e = task->example(split, 0, index);
        REQUIRE(e.tokens.size() == 256);
        CHECK(testing::is_shifted_by_one(e, 0));
        std::map<int32_t, std::vector<int32_t>> history;
        size_t t = 1;
        for (; symbols[e.tokens[t]] != "|"; t += 2) {
          REQUIRE(symbols[e.tokens[t]][0] == 'k');
          REQUIRE(symbols[e.tokens[t + 1]][0] == 'v');
          history[e.tokens[t]].push_back(e.tokens[t + 1]);
        }
        CHECK(t == 1 + 2 * 32);
        CHECK(history.size() == 4);
        for (const auto& [key, values] : history) {
          CHECK(values.size() >= 5);
          counts_seen.insert(values.size());
        }
        std::set<int32_t> queried;
        for (++t; t < e.tokens.size(); ++t) {
          if (!e.score_mask[t]) {
            CHECK((symbols[e.tokens[t]] == "_" || symbols[e.tokens[t]][0] == 'v'));  // noise or an answer just given
            continue;
          }
          CHECK(queried.insert(e.tokens[t]).second);  // each query asks a different key
          const auto& values = history.at(e.tokens[t]);
          REQUIRE(values.size() > size_t(n_back));  // the answer is never the key's first assignment
          CHECK(e.targets[t] == values[values.size() - n_back]);
          first_ranks.insert(values.size() - n_back);
        }
        CHECK(queried.size() == 4);
      }
    // Counts vary, so the answer is not at one fixed rank from the first assignment either.
    CHECK(counts_seen.size() >= 3);
    CHECK(first_ranks.size() >= 3);
    CHECK(first_ranks.count(0) == 0);
  }
}

TEST_CASE("MQRAR rejects layouts where the N-th most recent assignment could be a key's first", "[tasks]") {
  CHECK_THROWS_WITH(make({{"name", "mqrar"}, {"n_back", 5}, {"min_assignments", 5}}),
                    Catch::Contains("'n_back' has value 5") && Catch::Contains("below min_assignments 5"));
  CHECK_THROWS_WITH(make({{"name", "mqrar"}, {"keys", 8}, {"min_assignments", 5}, {"pairs", 32}}),
                    Catch::Contains("'pairs' has value 32") && Catch::Contains("keys 8 × min_assignments 5 = 40"));
  CHECK_NOTHROW(make({{"name", "mqrar"}, {"n_back", 4}}));
}

TEST_CASE("MQRAR rejects more queries than keys, which would let a query copy an earlier answer", "[tasks]") {
  CHECK_THROWS_WITH(make({{"name", "mqrar"}, {"queries", 5}}),
                    Catch::Contains("'queries' has value 5") && Catch::Contains("more than keys 4"));
  CHECK_NOTHROW(make({{"name", "mqrar"}, {"queries", 6}, {"keys", 6}}));
}
