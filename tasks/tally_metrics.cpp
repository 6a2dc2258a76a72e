// Tallies of scored predictions and their JSON form.
#include "tasks/tally_metrics.h"

#include <fmt/format.h>

#include "core/error.h"

namespace pathbench {

namespace {

json ratio(int64_t numerator, int64_t denominator) {
  return denominator > 0 ? json(double(numerator) / double(denominator)) : json(nullptr);
}

}  // namespace

void Tally::add(const Example& example, const std::vector<int32_t>& predictions) {
  if (predictions.size() != example.tokens.size() || example.score_mask.size() != example.tokens.size())
    throw Error(fmt::format("metrics: {} predictions for an example of {} tokens", predictions.size(),
                            example.tokens.size()));
  bool all_right = true;
  for (size_t t = 0; t < predictions.size(); ++t) {
    if (!example.score_mask[t]) continue;
    const bool right = predictions[t] == example.targets[t];
    ++scored;
    correct += right;
    all_right = all_right && right;
  }
  ++sequences;
  sequences_correct += all_right;
}

json Tally::accuracy() const { return ratio(correct, scored); }
json Tally::error_rate() const { return ratio(scored - correct, scored); }
json Tally::sequence_accuracy() const { return ratio(sequences_correct, sequences); }

TallyMetrics::TallyMetrics(Format format, std::string group_key)
    : format_(std::move(format)), group_key_(std::move(group_key)) {}

void TallyMetrics::add(const Example& example, const std::vector<int32_t>& predictions) {
  total_.add(example, predictions);
  if (!group_key_.empty()) groups_[example.group].add(example, predictions);
}

json TallyMetrics::result() const {
  json out = format_(total_);
  if (!group_key_.empty()) {
    json per = json::object();
    for (const auto& [group, tally] : groups_) per[std::to_string(group)] = format_(tally);
    out[group_key_] = per;
  }
  return out;
}

}  // namespace pathbench
