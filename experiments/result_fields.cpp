// result_fields: config key aliases and run-level metric names of result documents.
#include "experiments/result_fields.h"

#include <algorithm>

namespace pathbench {

const std::vector<std::pair<std::string, std::string>>& config_key_aliases() {
  static const std::vector<std::pair<std::string, std::string>> a = {
      {"encoding", "model.encoding"}, {"layers", "model.n_layers"}, {"width", "model.d_model"},
      {"heads", "model.n_heads"},     {"task", "task.name"},        {"lr", "optimizer.lr"},
      {"seed", "seed"},               {"steps", "training.steps"}};
  return a;
}

std::string config_key_of(const std::string& name) {
  for (const auto& [alias, key] : config_key_aliases())
    if (alias == name) return key;
  return name;
}

const std::vector<std::string>& run_metrics() {
  static const std::vector<std::string> fields = {"final_train_loss", "train_time_s", "eval_time_s",
                                                  "wall_time_s",      "tokens_per_s", "steps_done"};
  return fields;
}

bool is_run_metric(const std::string& metric) {
  const std::vector<std::string>& fields = run_metrics();
  return std::find(fields.begin(), fields.end(), metric) != fields.end();
}

}  // namespace pathbench
