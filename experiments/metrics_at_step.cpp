// The metrics of each run's periodic evaluation at a given step, read from its curve file.
#include "experiments/metrics_at_step.h"

#include <fmt/format.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "core/error.h"
#include "experiments/file_output.h"

namespace pathbench {

namespace {

// The curve line of the evaluation at `step` ({"step": …, "eval": {split: metrics}}), or null.
json evaluation_at(const std::string& curve_path, int64_t step) {
  std::istringstream lines(read_file(curve_path));
  std::string line;
  while (std::getline(lines, line)) {
    const json entry = json::parse(line, nullptr, false);
    if (entry.is_object() && entry.contains("eval") && entry.value("step", int64_t(-1)) == step) return entry["eval"];
  }
  return nullptr;
}

}  // namespace

void use_metrics_at_step(std::vector<json>& results, int64_t step) {
  for (json& r : results) {
    const std::string path = r.value("path", "?");
    if (r.value("status", "") != "done") continue;            // left out of tables anyway
    if (r.value("steps_done", int64_t(0)) < step) continue;  // ended before `step`: its last metrics hold
    if (!r.contains("curve") || !r["curve"].is_string())
      throw Error(fmt::format("result '{}' names no curve file, so --at-step cannot read its evaluations", path));
    const std::string curve = (std::filesystem::path(path).parent_path() / r["curve"].get<std::string>()).string();
    if (!std::filesystem::is_regular_file(curve))
      throw Error(fmt::format("result '{}': its curve file '{}' is missing", path, curve));
    const json metrics = evaluation_at(curve, step);
    if (metrics.is_null())
      throw Error(fmt::format("result '{}' has no evaluation at step {} in '{}' (its config evaluates every {} steps)",
                              path, step, curve, r["config"]["training"].value("eval_every", int64_t(0))));
    r["metrics"] = metrics;
  }
}

}  // namespace pathbench
