// The metric accumulator every task uses: counts of scored positions and sequences predicted right,
// overall and per example group (length, book size, …); each task turns a tally into its metrics.
#pragma once
#include <functional>
#include <map>
#include <string>

#include "tasks/task.h"

namespace pathbench {

struct Tally {
  int64_t sequences = 0;
  int64_t sequences_correct = 0;  // every scored position right
  int64_t scored = 0;             // scored positions
  int64_t correct = 0;            // scored positions right

  void add(const Example& example, const std::vector<int32_t>& predictions);
  // correct / scored and sequences_correct / sequences; null when nothing was counted.
  json accuracy() const;
  json error_rate() const;
  json sequence_accuracy() const;
};

class TallyMetrics : public MetricAccumulator {
 public:
  using Format = std::function<json(const Tally&)>;
  // format: the metrics of one tally. group_key: the key of the per-group breakdown in result()
  // (e.g. "per_length"), or "" for none.
  TallyMetrics(Format format, std::string group_key);
  void add(const Example& example, const std::vector<int32_t>& predictions) override;
  json result() const override;

 private:
  Format format_;
  std::string group_key_;
  Tally total_;
  std::map<int64_t, Tally> groups_;
};

}  // namespace pathbench
