// Parsing and checking of evaluation-split settings.
#include "tasks/split_config.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace pathbench {

namespace {

// Checks the object and its split names; calls visit(name, value) for each split.
template <typename Visit>
void visit_splits(const json& object, const std::string& key, const std::string& where, Visit visit) {
  if (!object.is_object() || object.empty())
    throw Error(fmt::format("{}: key '{}' has value {} (expected a non-empty object: split name → setting)", where,
                            key, object.dump()));
  for (const auto& [name, value] : object.items()) {
    if (name.empty() || name == "train")
      throw Error(fmt::format("{}: key '{}' has split name \"{}\" (names must be non-empty and not \"train\")", where,
                              key, name));
    visit(name, value);
  }
}

}  // namespace

std::map<std::string, std::vector<int64_t>> int_list_splits(const json& object, const std::string& key,
                                                            int64_t min_value, int64_t max_value,
                                                            const std::string& where) {
  std::map<std::string, std::vector<int64_t>> out;
  visit_splits(object, key, where, [&](const std::string& name, const json& value) {
    bool ok = value.is_array() && !value.empty();
    for (const auto& v : value)
      ok = ok && v.is_number_integer() && v.get<int64_t>() >= min_value && v.get<int64_t>() <= max_value;
    if (!ok)
      throw Error(fmt::format("{}: key '{}' has value {} for split \"{}\" (expected a non-empty list of integers >= {} "
                              "and <= {})",
                              where, key, value.dump(), name, min_value, max_value));
    out[name] = value.get<std::vector<int64_t>>();
  });
  return out;
}

std::map<std::string, double> number_splits(const json& object, const std::string& key, double min_value,
                                            double max_value, const std::string& where) {
  std::map<std::string, double> out;
  visit_splits(object, key, where, [&](const std::string& name, const json& value) {
    if (!value.is_number() || value.get<double>() < min_value || !(value.get<double>() < max_value))
      throw Error(fmt::format("{}: key '{}' has value {} for split \"{}\" (expected a number >= {} and < {})", where,
                              key, value.dump(), name, min_value, max_value));
    out[name] = value.get<double>();
  });
  return out;
}

void check_split(const std::string& task, const std::string& split, const std::vector<std::string>& eval_splits) {
  if (split == "train" || std::find(eval_splits.begin(), eval_splits.end(), split) != eval_splits.end()) return;
  throw Error(fmt::format("task '{}': unknown split '{}' (splits: train, {})", task, split, fmt::join(eval_splits, ", ")));
}

}  // namespace pathbench
