// Names that tables and commands read in result documents: the short aliases of config keys
// (encoding → model.encoding, …) and the fields of a whole run that tabulate like a metric.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace pathbench {

// The short names of config keys: (alias, dotted key) pairs.
const std::vector<std::pair<std::string, std::string>>& config_key_aliases();

// The dotted config key of an alias, or `name` itself.
std::string config_key_of(const std::string& name);

// The fields of a whole run's result (final_train_loss, train_time_s, …) that tabulate like a
// metric, under the one pseudo split "run"; and whether `metric` is one of them.
const std::vector<std::string>& run_metrics();
bool is_run_metric(const std::string& metric);

}  // namespace pathbench
