// MQRAR-N, N-back associative recall with repeated keys. A sequence holds `pairs` assignments
// "key value" over `keys` distinct keys (drawn from `key_vocab` key symbols) with uniform values:
// every key is assigned `min_assignments` times, the remaining assignments go to keys drawn
// uniformly, and the order is shuffled, so a key's count varies between sequences. Then a separator
// "|", then a query region of `length` − 2·pairs − 1 tokens of noise "_" holding `queries` queries
// "key answer" at random non-overlapping places, each about a different key (a second query of a
// key would have the same answer, which the model could copy from the first query instead of
// recalling it). A query's answer is the N-th most recent value assigned to its key (N = n_back;
// N = 1 is the last assignment). Since n_back < min_assignments, the answer is never a key's first
// assignment (were every key assigned exactly N times, "N-th most recent" would be "first", a
// different and easier lookup), and since counts vary, it is not at a fixed rank from the first
// either. The model reads BOS and every token but the last and predicts each next token; the
// answers are scored.
#include <fmt/format.h>

#include <numeric>

#include "tasks/holdout.h"
#include "tasks/next_token.h"
#include "tasks/split_config.h"
#include "tasks/tally_metrics.h"
#include "tasks/task_list.h"

namespace pathbench {

namespace {

// A uniform random choice of `count` distinct values of [0, n), in random order (partial
// Fisher–Yates shuffle).
std::vector<int64_t> choose_distinct(CounterRng& rng, int64_t n, int64_t count) {
  std::vector<int64_t> pool(n);
  std::iota(pool.begin(), pool.end(), 0);
  for (int64_t i = 0; i < count; ++i) std::swap(pool[i], pool[i + int64_t(rng.below(uint64_t(n - i)))]);
  pool.resize(count);
  return pool;
}

class Mqrar : public Task {
  enum Token : int32_t { kBos = 0, kSeparator = 1, kNoise = 2, kFirstKey = 3 };

 public:
  Mqrar(const json& o, const std::string& where)
      : n_back_(o["n_back"].get<int64_t>()),
        pairs_(o["pairs"].get<int64_t>()),
        keys_(o["keys"].get<int64_t>()),
        min_assignments_(o["min_assignments"].get<int64_t>()),
        key_vocab_(o["key_vocab"].get<int64_t>()),
        value_vocab_(o["value_vocab"].get<int64_t>()),
        queries_(o["queries"].get<int64_t>()),
        length_(o["length"].get<int64_t>()),
        loss_on_all_(o["loss"] == "all"),
        where_(where),
        draw_function_(draw_function_id("mqrar", o)) {
    if (keys_ > key_vocab_)
      throw Error(fmt::format("{}: key 'keys' has value {} (more than key_vocab {})", where, keys_, key_vocab_));
    if (keys_ * min_assignments_ > pairs_)
      throw Error(fmt::format("{}: key 'pairs' has value {} (fewer than keys {} × min_assignments {} = {})", where,
                              pairs_, keys_, min_assignments_, keys_ * min_assignments_));
    if (n_back_ >= min_assignments_)
      throw Error(fmt::format("{}: key 'n_back' has value {} (must be below min_assignments {}, so that the answer "
                              "is never a key's first assignment)",
                              where, n_back_, min_assignments_));
    if (queries_ > keys_)
      throw Error(fmt::format("{}: key 'queries' has value {} (more than keys {}: each query asks a different key, "
                              "since a repeated query could copy the earlier one's answer)",
                              where, queries_, keys_));
    const int64_t needed = 2 * pairs_ + 1 + 2 * queries_;
    if (length_ < needed)
      throw Error(fmt::format("{}: key 'length' has value {} (too short for {} pairs, a separator and {} queries: "
                              "needs >= {})", where, length_, pairs_, queries_, needed));
    vocabulary_.symbols = {"<bos>", "|", "_"};
    for (int64_t k = 0; k < key_vocab_; ++k) vocabulary_.symbols.push_back(fmt::format("k{}", k));
    for (int64_t v = 0; v < value_vocab_; ++v) vocabulary_.symbols.push_back(fmt::format("v{}", v));
  }

  const Vocabulary& vocabulary() const override { return vocabulary_; }
  std::vector<std::string> eval_splits() const override { return {"eval"}; }

  Example example(const std::string& split, uint64_t seed, uint64_t index) const override {
    check_split("mqrar", split, eval_splits());
    CounterRng rng = example_rng("mqrar", split, seed, index);
    return draw_for_split({draw_function_, split, seed, index}, rng, [&](CounterRng& r) { return draw(r); },
                          fmt::format("{}: mqrar split '{}'", where_, split));
  }

  std::unique_ptr<MetricAccumulator> metrics(const std::string& split) const override {
    check_split("mqrar", split, eval_splits());
    return std::make_unique<TallyMetrics>(
        [](const Tally& t) {
          return json{{"accuracy", t.accuracy()}, {"sequence_accuracy", t.sequence_accuracy()},
                      {"scored", t.scored}, {"sequences", t.sequences}};
        },
        "");
  }
  std::string primary_metric() const override { return "accuracy"; }
  bool higher_is_better() const override { return true; }
  uint64_t draw_function() const override { return draw_function_; }

 private:
  int32_t key_token(int64_t k) const { return kFirstKey + int32_t(k); }
  int32_t value_token(int64_t v) const { return kFirstKey + int32_t(key_vocab_ + v); }

  Example draw(CounterRng& rng) const {
    const std::vector<int64_t> key_symbols = choose_distinct(rng, key_vocab_, keys_);
    // The assignment order: min_assignments of each key, the rest to uniform keys, shuffled.
    std::vector<int64_t> order;
    for (int64_t c = 0; c < keys_; ++c) order.insert(order.end(), min_assignments_, c);
    while (int64_t(order.size()) < pairs_) order.push_back(int64_t(rng.below(uint64_t(keys_))));
    for (int64_t i = pairs_ - 1; i > 0; --i) std::swap(order[i], order[rng.below(uint64_t(i + 1))]);

    std::vector<int32_t> seq(length_, kNoise);
    std::vector<uint8_t> scored(length_, 0);
    std::vector<std::vector<int32_t>> history(keys_);  // values assigned to each key, oldest first
    for (int64_t i = 0; i < pairs_; ++i) {
      const int32_t value = value_token(int64_t(rng.below(uint64_t(value_vocab_))));
      seq[2 * i] = key_token(key_symbols[order[i]]);
      seq[2 * i + 1] = value;
      history[order[i]].push_back(value);
    }
    seq[2 * pairs_] = kSeparator;
    const int64_t region = 2 * pairs_ + 1;  // first token of the query region
    const std::vector<int64_t> slots = choose_distinct(rng, (length_ - region) / 2, queries_);
    const std::vector<int64_t> queried = choose_distinct(rng, keys_, queries_);  // distinct keys, random order
    for (size_t q = 0; q < slots.size(); ++q) {
      const int64_t c = queried[q];
      const int64_t at = region + 2 * slots[q];
      seq[at] = key_token(key_symbols[c]);
      seq[at + 1] = history[c][history[c].size() - n_back_];
      scored[at + 1] = 1;
    }
    return next_token_example(kBos, std::move(seq), std::move(scored), loss_on_all_, 0);
  }

  int64_t n_back_, pairs_, keys_, min_assignments_, key_vocab_, value_vocab_, queries_, length_;
  bool loss_on_all_;
  std::string where_;
  uint64_t draw_function_;
  Vocabulary vocabulary_;
};

}  // namespace

TaskInfo mqrar_task() {
  return {"mqrar",
          "MQRAR-N: recall the N-th most recent value assigned to a repeatedly reassigned key",
          {{"n_back", OptionType::Int, 2, "N: a query asks for the N-th most recent value of its key", 1},
           {"pairs", OptionType::Int, 32, "key-value assignments before the queries", 1},
           {"keys", OptionType::Int, 4, "distinct keys per sequence", 1},
           {"min_assignments", OptionType::Int, 5,
            "assignments every key gets (the rest of the pairs go to uniformly drawn keys); n_back must be below it",
            2},
           {"key_vocab", OptionType::Int, 32, "key symbols", 1, 65536},
           {"value_vocab", OptionType::Int, 32, "value symbols", 2, 65536},
           {"queries", OptionType::Int, 4, "queries per sequence, each about a different key (at most keys)", 1},
           {"length", OptionType::Int, 768, "tokens per sequence (model input: BOS + the first length-1)", 4,
            double(kMaxTaskLength)},
           loss_option("scored")},
          [](const json& o, const std::string& where) { return std::make_unique<Mqrar>(o, where); }};
}

}  // namespace pathbench
