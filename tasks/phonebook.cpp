// Phonebook retrieval, character level: a book of "name:number" lines (names of `name_syllables`
// consonant–vowel syllables, unique within a book; numbers of `number_digits` uniform digits), then
// a query line "?name:" for one of the book's names, whose answer is that name's number. The model
// reads BOS and every character but the last and predicts each next character; the answer digits
// are scored (exact match: every digit is the argmax under teacher forcing). Metrics are broken
// down by book size (the example's group).
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <unordered_set>

#include "core/error.h"
#include "tasks/next_token.h"
#include "tasks/sized_task.h"
#include "tasks/split_config.h"
#include "tasks/tally_metrics.h"
#include "tasks/task_list.h"

namespace pathbench {

namespace {

constexpr std::string_view kConsonants = "bdfghjklmnprstvz";
constexpr std::string_view kVowels = "aeiou";
constexpr int64_t kSyllables = int64_t(kConsonants.size() * kVowels.size());

class Phonebook : public SizedTask {
 public:
  Phonebook(const json& o, const std::string& where)
      : SizedTask("phonebook", o, {"train_min_entries", "train_max_entries", "eval_splits", kMaxBookEntries}, where),
        syllables_(o["name_syllables"].get<int>()),
        digits_(o["number_digits"].get<int>()),
        loss_on_all_(o["loss"] == "all") {
    names_ = int64_t(std::llround(std::pow(double(kSyllables), syllables_)));
    auto check_size = [&](const std::string& key, int64_t entries) {
      if (entries > names_)
        throw Error(fmt::format("{}: key '{}' asks for books of {} entries, more than the {} distinct names of {} "
                                "syllable(s) (raise name_syllables)", where, key, entries, names_, syllables_));
    };
    check_size("train_max_entries", train_max());
    for (const auto& [split, sizes] : eval_sizes())
      for (int64_t n : sizes) check_size("eval_splits", n);
    build_vocabulary();
  }

  const Vocabulary& vocabulary() const override { return vocabulary_; }

  std::unique_ptr<MetricAccumulator> metrics(const std::string& split) const override {
    check_split("phonebook", split, eval_splits());
    return std::make_unique<TallyMetrics>(
        [](const Tally& t) {
          return json{{"exact_match", t.sequence_accuracy()}, {"digit_accuracy", t.accuracy()},
                      {"sequences", t.sequences}, {"scored", t.scored}};
        },
        "per_book_size");
  }
  std::string primary_metric() const override { return "exact_match"; }
  bool higher_is_better() const override { return true; }

 private:
  void build_vocabulary() {
    token_of_.fill(-1);
    auto add = [&](char c, std::string symbol) {
      token_of_[static_cast<unsigned char>(c)] = int32_t(vocabulary_.symbols.size());
      vocabulary_.symbols.push_back(std::move(symbol));
    };
    bos_ = 0;
    vocabulary_.symbols.push_back("<bos>");
    for (char c : std::string_view("\n:?0123456789")) add(c, std::string(1, c));
    for (std::string_view letters : {kConsonants, kVowels})
      for (char c : letters) add(c, std::string(1, c));
    vocabulary_.separator = "";
  }

  void append(std::vector<int32_t>& seq, char c) const { seq.push_back(token_of_[static_cast<unsigned char>(c)]); }

  // Name number `id` (base-kSyllables digits, one syllable each).
  void append_name(std::vector<int32_t>& seq, int64_t id) const {
    for (int s = 0; s < syllables_; ++s, id /= kSyllables) {
      append(seq, kConsonants[size_t(id % kSyllables) / kVowels.size()]);
      append(seq, kVowels[size_t(id % kSyllables) % kVowels.size()]);
    }
  }

  Example draw(CounterRng& rng, int64_t entries) const override {
    std::vector<int64_t> names;
    std::unordered_set<int64_t> used;
    while (int64_t(names.size()) < entries) {
      const int64_t id = int64_t(rng.below(uint64_t(names_)));
      if (used.insert(id).second) names.push_back(id);
    }
    std::vector<int32_t> seq;
    seq.reserve(size_t(entries) * (2 * syllables_ + digits_ + 2) + 2 * syllables_ + digits_ + 2);
    std::vector<int32_t> answer;
    const int64_t queried = int64_t(rng.below(uint64_t(entries)));
    for (int64_t k = 0; k < entries; ++k) {
      append_name(seq, names[k]);
      append(seq, ':');
      for (int d = 0; d < digits_; ++d) {
        seq.push_back(token_of_[static_cast<unsigned char>('0')] + int32_t(rng.below(10)));
        if (k == queried) answer.push_back(seq.back());
      }
      append(seq, '\n');
    }
    append(seq, '?');
    append_name(seq, names[queried]);
    append(seq, ':');
    seq.insert(seq.end(), answer.begin(), answer.end());
    std::vector<uint8_t> scored(seq.size(), 0);
    std::fill(scored.end() - digits_, scored.end(), 1);
    return next_token_example(bos_, std::move(seq), std::move(scored), loss_on_all_, entries);
  }

  int syllables_;
  int digits_;
  bool loss_on_all_;
  int64_t names_ = 0;  // distinct names
  int32_t bos_ = 0;
  std::array<int32_t, 256> token_of_{};  // character → token, -1 if none
  Vocabulary vocabulary_;
};

}  // namespace

TaskInfo phonebook_task() {
  return {"phonebook",
          "phonebook retrieval: recall the number of a queried name from a book of name:number lines",
          {{"name_syllables", OptionType::Int, 2, "syllables per name (80 syllables: 80^n distinct names)", 1, 4},
           {"number_digits", OptionType::Int, 7, "digits per number", 1, 32},
           {"train_min_entries", OptionType::Int, 8, "smallest training book", 1, double(kMaxBookEntries)},
           {"train_max_entries", OptionType::Int, 32, "largest training book", 1, double(kMaxBookEntries)},
           curriculum_option("book sizes"),
           {"eval_splits", OptionType::Object, json{{"in_dist", {8, 16, 32}}, {"longer", {64, 128}}},
            "evaluation splits: name → book sizes (cycled by example index)"},
           loss_option("scored")},
          [](const json& o, const std::string& where) { return std::make_unique<Phonebook>(o, where); }};
}

}  // namespace pathbench
