// Sizes per split and the drawing of sized examples.
#include "tasks/sized_task.h"

#include <fmt/format.h>

#include <algorithm>

#include "tasks/holdout.h"
#include "tasks/split_config.h"

namespace pathbench {

SizedTask::SizedTask(std::string name, const json& o, const SizeOptions& keys, const std::string& where)
    : name_(std::move(name)),
      where_(where),
      draw_function_(draw_function_id(name_, o)),
      min_(o[keys.min_key].get<int64_t>()),
      max_(o[keys.max_key].get<int64_t>()),
      curriculum_(o["curriculum_examples"].get<int64_t>()),
      eval_(int_list_splits(o[keys.eval_key], keys.eval_key, 1, keys.largest, where)) {
  if (max_ < min_)
    throw Error(fmt::format("{}: key '{}' has value {} (must be >= {} {})", where, keys.max_key, max_, keys.min_key, min_));
}

std::vector<std::string> SizedTask::eval_splits() const { return split_names(eval_); }

Example SizedTask::example(const std::string& split, uint64_t seed, uint64_t index) const {
  check_split(name_, split, eval_splits());
  CounterRng rng = example_rng(name_, split, seed, index);
  if (split == "train") {
    const int64_t largest = train_max_at(index);
    return draw_for_split({draw_function_, split, seed, index}, rng,
                          [&](CounterRng& r) { return draw(r, min_ + int64_t(r.below(uint64_t(largest - min_ + 1)))); },
                          fmt::format("{}: {} split 'train' (sizes {}..{})", where_, name_, min_, largest));
  }
  const auto& sizes = eval_.at(split);
  const int64_t size = sizes[index % sizes.size()];
  return draw_for_split({draw_function_, split, seed, index}, rng, [&](CounterRng& r) { return draw(r, size); },
                        fmt::format("{}: {} split '{}' size {}", where_, name_, split, size));
}

int64_t SizedTask::train_max_at(uint64_t index) const {
  if (curriculum_ == 0 || index >= uint64_t(curriculum_)) return max_;
  return min_ + int64_t((uint64_t(max_ - min_) * index) / uint64_t(curriculum_));
}

OptionSpec curriculum_option(const std::string& sizes) {
  return {"curriculum_examples", OptionType::Int, 0,
          fmt::format("training examples (steps × batch size) over which the largest training size grows linearly "
                      "from the smallest to the largest ({}); 0: every size from the start", sizes),
          0, double(kMaxCurriculumExamples)};
}

void SizedTask::probe_eval_splits() const {
  for (const auto& [split, sizes] : eval_)
    for (size_t i = 0; i < sizes.size(); ++i) example(split, 0, i);
}

int64_t SizedTask::largest_size() const {
  int64_t largest = max_;
  for (const auto& [split, sizes] : eval_) largest = std::max(largest, *std::max_element(sizes.begin(), sizes.end()));
  return largest;
}

}  // namespace pathbench
