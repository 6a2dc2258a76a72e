// Evaluation splits as tasks configure them: an object mapping each split name to its setting
// (a probability, a list of lengths or book sizes, …), and the check of a requested split name.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/options.h"

namespace pathbench {

// The longest sequence (in tokens, word letters) a task option may ask for: 2^20, so that the
// examples drawn at validation and evaluation fit in memory. Phonebook books: at most 2^16 entries.
inline constexpr int64_t kMaxTaskLength = int64_t(1) << 20;
inline constexpr int64_t kMaxBookEntries = int64_t(1) << 16;

// Split name → list of integers in [min_value, max_value] (e.g. {"longer": [64, 128]}). Errors name
// `where`, `key` and the offending split and value.
std::map<std::string, std::vector<int64_t>> int_list_splits(const json& object, const std::string& key,
                                                            int64_t min_value, int64_t max_value,
                                                            const std::string& where);
// Split name → number in [min_value, max_value) (e.g. {"sparse": 0.98}).
std::map<std::string, double> number_splits(const json& object, const std::string& key, double min_value,
                                            double max_value, const std::string& where);

template <typename V>
std::vector<std::string> split_names(const std::map<std::string, V>& splits) {
  std::vector<std::string> names;
  for (const auto& [name, value] : splits) names.push_back(name);
  return names;
}

// Throws pathbench::Error when `split` is neither "train" nor one of `eval_splits`.
void check_split(const std::string& task, const std::string& split, const std::vector<std::string>& eval_splits);

}  // namespace pathbench
