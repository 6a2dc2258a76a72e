// Word problems over a finite group (state tracking). A word g_1 … g_L is drawn over a generator
// set S (default: every element). Tagging mode: the target at position i is the prefix product
// g_1⋯g_i (token ids are element indices). Decision mode: the word is followed by a query token
// "?" whose target is "yes" when the word's product is the identity and "no" otherwise; with
// `balanced`, half the words (at lengths where both answers occur) equal the identity. Training
// draws lengths uniformly from [train_min_length, train_max_length]; an evaluation split cycles
// through its lengths by index, and metrics are broken down by length (the example's group).
#include <fmt/format.h>

#include <algorithm>

#include "tasks/groups.h"
#include "tasks/holdout.h"
#include "tasks/sized_task.h"
#include "tasks/split_config.h"
#include "tasks/tally_metrics.h"
#include "tasks/task_list.h"
#include "tasks/word_generators.h"

namespace pathbench {

namespace {

class WordProblem : public SizedTask {
 public:
  WordProblem(const json& o, const std::string& where)
      : SizedTask("word_problem", o, {"train_min_length", "train_max_length", "eval_splits", kMaxTaskLength}, where),
        group_(FiniteGroup::from_name(o["group"], where)),
        decision_(o["mode"] == "decision"),
        balanced_(o["balanced"].get<bool>()),
        bos_(o["bos"].get<bool>()) {
    if (group_.order() < 2)
      throw Error(fmt::format("{}: key 'group' has value \"{}\" (the trivial group has no word problem)", where,
                              group_.name()));
    generators_ = parse_word_generators(group_, o["generators"], where);
    index_generators();
    if (decision_) {
      for (int g : generators_) vocabulary_.symbols.push_back(group_.symbol(g));
      query_ = int32_t(vocabulary_.symbols.size());
      vocabulary_.symbols.insert(vocabulary_.symbols.end(), {"?", "no", "yes"});
      find_reachable_answers();
    } else {
      for (int g = 0; g < group_.order(); ++g) vocabulary_.symbols.push_back(group_.symbol(g));
    }
    if (bos_) {
      bos_token_ = int32_t(vocabulary_.symbols.size());
      vocabulary_.symbols.push_back("<bos>");
    }
    probe_eval_splits();
  }

  const Vocabulary& vocabulary() const override { return vocabulary_; }

  std::unique_ptr<MetricAccumulator> metrics(const std::string& split) const override {
    check_split("word_problem", split, eval_splits());
    return std::make_unique<TallyMetrics>(
        [](const Tally& t) {
          return json{{"token_accuracy", t.accuracy()}, {"sequence_accuracy", t.sequence_accuracy()},
                      {"sequences", t.sequences}, {"scored", t.scored}};
        },
        "per_length");
  }
  std::string primary_metric() const override { return "sequence_accuracy"; }
  bool higher_is_better() const override { return true; }

 private:
  void index_generators() {
    generator_token_.assign(group_.order(), -1);
    for (size_t i = 0; i < generators_.size(); ++i) generator_token_[generators_[i]] = int32_t(i);
  }

  // For every length up to the longest one used: whether words over the generators can equal the
  // identity, and whether they can differ from it. The reachable sets R_L = R_{L-1}·S repeat
  // periodically, so they are computed until the first repetition.
  void find_reachable_answers() {
    const int64_t longest = largest_size();
    std::vector<std::vector<bool>> reachable;  // reachable[L-1] = R_L
    std::vector<bool> current(group_.order(), false);
    for (int g : generators_) current[g] = true;
    int64_t period_start = -1;
    while (int64_t(reachable.size()) < longest) {
      auto seen = std::find(reachable.begin(), reachable.end(), current);
      if (seen != reachable.end()) {
        period_start = seen - reachable.begin();
        break;
      }
      reachable.push_back(current);
      std::vector<bool> next(group_.order(), false);
      for (int a = 0; a < group_.order(); ++a)
        if (current[a])
          for (int g : generators_) next[group_.multiply(a, g)] = true;
      current = std::move(next);
    }
    const int64_t known = int64_t(reachable.size());
    for (int64_t length = 1; length <= longest; ++length) {
      int64_t i = length - 1;
      if (i >= known) i = period_start + (i - period_start) % (known - period_start);
      const auto& r = reachable[i];
      can_be_identity_.push_back(r[group_.identity()]);
      can_differ_.push_back(std::count(r.begin(), r.end(), true) > (r[group_.identity()] ? 1 : 0));
    }
  }

  // The product of the first n letters of `word`.
  int product(const std::vector<int>& word, int64_t n) const {
    int p = group_.identity();
    for (int64_t i = 0; i < n; ++i) p = group_.multiply(p, word[i]);
    return p;
  }

  // A uniform word of `length` letters over the generators; in decision mode with `balanced`, a
  // uniform word among those with the answer drawn first (each answer with probability 1/2 where
  // both occur at this length).
  std::vector<int> draw_word(CounterRng& rng, int64_t length) const {
    std::vector<int> word(length);
    auto fill = [&](int64_t n) {
      for (int64_t i = 0; i < n; ++i) word[i] = generators_[rng.below(generators_.size())];
    };
    if (!decision_ || !balanced_) {
      fill(length);
      return word;
    }
    const bool yes_possible = can_be_identity_[length - 1], no_possible = can_differ_[length - 1];
    const bool want_identity = yes_possible && (!no_possible || rng.bernoulli(0.5));
    for (int attempt = 0; attempt < kMaxDrawAttempts; ++attempt) {
      if (want_identity) {
        // A uniform prefix, completed by the one letter that makes the product the identity.
        fill(length - 1);
        word[length - 1] = group_.inverse(product(word, length - 1));
        if (generator_token_[word[length - 1]] >= 0) return word;
      } else {
        fill(length);
        if (product(word, length) != group_.identity()) return word;
      }
    }
    throw Error(fmt::format("{}: word_problem found no word of length {} with the wanted answer after {} draws",
                            where(), length, kMaxDrawAttempts));
  }

  // With bos, a start token (unscored) precedes the word: without it, a word's repeated first
  // letters give identical inputs at every position, which no causal model can tell apart.
  Example draw(CounterRng& rng, int64_t length) const override {
    const std::vector<int> word = draw_word(rng, length);
    Example e;
    e.group = length;
    if (bos_) e.tokens.push_back(bos_token_);
    const size_t start = e.tokens.size();
    if (decision_) {
      for (int g : word) e.tokens.push_back(generator_token_[g]);
      e.tokens.push_back(query_);
      e.targets.assign(e.tokens.size(), 0);
      e.targets.back() = product(word, length) == group_.identity() ? query_ + 2 : query_ + 1;
      e.loss_mask.assign(e.tokens.size(), 0);
      e.loss_mask.back() = 1;
    } else {
      e.targets.assign(start, 0);
      int p = group_.identity();
      for (int g : word) {
        p = group_.multiply(p, g);
        e.tokens.push_back(g);
        e.targets.push_back(p);
      }
      e.loss_mask.assign(e.tokens.size(), 1);
      std::fill(e.loss_mask.begin(), e.loss_mask.begin() + start, 0);
    }
    e.score_mask = e.loss_mask;
    return e;
  }

  FiniteGroup group_;
  bool decision_;
  bool balanced_;
  bool bos_;
  int32_t bos_token_ = -1;               // "<bos>" when bos_
  std::vector<int> generators_;          // element indices
  std::vector<int32_t> generator_token_; // [order] index in generators_ (decision-mode token), -1 if none
  int32_t query_ = -1;                   // decision mode: "?", followed by "no", "yes"
  std::vector<bool> can_be_identity_;    // [longest length] decision mode, by length − 1
  std::vector<bool> can_differ_;
  Vocabulary vocabulary_;
};

}  // namespace

TaskInfo word_problem_task() {
  return {"word_problem",
          "group word problems: prefix products (tagging) or whether a word is the identity (decision)",
          {{"group", OptionType::String, "A5", "the group: Z<n>, S<n>, A<n> and products joined by 'x' (A5, S5, A4xZ5, Z60, S3, Z2)"},
           {"mode", OptionType::String, "tagging", "tagging: label every prefix product; decision: is the word the identity?",
            {}, {}, {"tagging", "decision"}},
           {"generators", OptionType::StringList, json::array(),
            "letters of the words as element symbols or cycles, two or more, e.g. [\"(0 1 2)\", \"(0 2 1)\"]; empty: "
            "every element"},
           {"balanced", OptionType::Bool, true, "decision mode: half the words equal the identity (where possible)"},
           {"bos", OptionType::Bool, true, "start every sequence with an unscored <bos> token"},
           {"train_min_length", OptionType::Int, 1, "shortest training word", 1, double(kMaxTaskLength)},
           {"train_max_length", OptionType::Int, 32, "longest training word", 1, double(kMaxTaskLength)},
           curriculum_option("word lengths"),
           {"eval_splits", OptionType::Object, json{{"in_dist", {8, 16, 32}}, {"longer", {64, 128}}},
            "evaluation splits: name → word lengths (cycled by example index)"}},
          [](const json& o, const std::string& where) { return std::make_unique<WordProblem>(o, where); }};
}

}  // namespace pathbench
