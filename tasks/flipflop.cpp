// Flip-flop language modeling FFL(p): instructions alternate with bits; the first instruction is w
// (write), the last r (read), the others i.i.d. with P(i) = p (ignore), P(w) = P(r) = (1 − p)/2.
// Bits after w and i are uniform; the bit after r repeats the last written bit, the only
// deterministic prediction, and the only one scored. The model reads BOS and the first length − 1
// tokens and predicts all `length` tokens, so its input is exactly `length` tokens.
#include <fmt/format.h>

#include "tasks/holdout.h"
#include "tasks/next_token.h"
#include "tasks/split_config.h"
#include "tasks/tally_metrics.h"
#include "tasks/task_list.h"

namespace pathbench {

namespace {

class FlipFlop : public Task {
  enum Token : int32_t { kWrite = 0, kRead = 1, kIgnore = 2, kZero = 3, kOne = 4, kBos = 5 };

 public:
  FlipFlop(const json& o, const std::string& where)
      : length_(o["length"].get<int64_t>()),
        train_p_(o["p"].get<double>()),
        loss_on_all_(o["loss"] == "all"),
        eval_p_(number_splits(o["eval_splits"], "eval_splits", 0.0, 1.0, where)),
        where_(where),
        draw_function_(draw_function_id("flipflop", o)) {
    if (length_ % 2 != 0)
      throw Error(fmt::format("{}: key 'length' has value {} (must be even: instruction–bit pairs)", where, length_));
    vocabulary_.symbols = {"w", "r", "i", "0", "1", "<bos>"};
    for (const auto& split : eval_splits()) example(split, 0, 0);  // fail now if a side is empty
  }

  const Vocabulary& vocabulary() const override { return vocabulary_; }
  std::vector<std::string> eval_splits() const override { return split_names(eval_p_); }

  Example example(const std::string& split, uint64_t seed, uint64_t index) const override {
    check_split("flipflop", split, eval_splits());
    const double p = split == "train" ? train_p_ : eval_p_.at(split);
    CounterRng rng = example_rng("flipflop", split, seed, index);
    return draw_for_split({draw_function_, split, seed, index}, rng, [&](CounterRng& r) { return draw(r, p); },
                          fmt::format("{}: flipflop split '{}' (length {})", where_, split, length_));
  }

  std::unique_ptr<MetricAccumulator> metrics(const std::string& split) const override {
    check_split("flipflop", split, eval_splits());
    return std::make_unique<TallyMetrics>(
        [](const Tally& t) { return json{{"error_rate", t.error_rate()}, {"errors", t.scored - t.correct}, {"scored", t.scored}}; },
        "");
  }
  std::string primary_metric() const override { return "error_rate"; }
  bool higher_is_better() const override { return false; }
  uint64_t draw_function() const override { return draw_function_; }

 private:
  Example draw(CounterRng& rng, double p) const {
    std::vector<int32_t> seq(length_);
    std::vector<uint8_t> scored(length_, 0);
    int32_t memory = kZero;
    const int64_t pairs = length_ / 2;
    for (int64_t k = 0; k < pairs; ++k) {
      int32_t instruction = kIgnore;
      if (k == 0) {
        instruction = kWrite;
      } else if (k == pairs - 1) {
        instruction = kRead;
      } else {
        const double u = rng.uniform();
        instruction = u < p ? kIgnore : (u < p + (1.0 - p) / 2 ? kWrite : kRead);
      }
      int32_t bit = memory;
      if (instruction == kRead) {
        scored[2 * k + 1] = 1;
      } else {
        bit = rng.bernoulli(0.5) ? kOne : kZero;
        if (instruction == kWrite) memory = bit;
      }
      seq[2 * k] = instruction;
      seq[2 * k + 1] = bit;
    }
    return next_token_example(kBos, std::move(seq), std::move(scored), loss_on_all_, 0);
  }

  int64_t length_;
  double train_p_;
  bool loss_on_all_;
  std::map<std::string, double> eval_p_;
  std::string where_;
  uint64_t draw_function_;
  Vocabulary vocabulary_;
};

}  // namespace

TaskInfo flipflop_task() {
  return {"flipflop",
          "flip-flop language modeling FFL(p): recall the last written bit at each read",
          {{"length", OptionType::Int, 512, "tokens per sequence (model input: BOS + the first length-1); even", 4,
            double(kMaxTaskLength)},
           {"p", OptionType::Float, 0.8, "training P(ignore); P(write) = P(read) = (1-p)/2", 0.0, 1.0, {}, false, true},
           {"eval_splits", OptionType::Object, json{{"in_dist", 0.8}, {"sparse", 0.98}, {"dense", 0.1}},
            "evaluation splits: name → p"},
           loss_option("all")},
          [](const json& o, const std::string& where) { return std::make_unique<FlipFlop>(o, where); }};
}

}  // namespace pathbench
