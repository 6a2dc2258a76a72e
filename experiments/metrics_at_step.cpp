// Each run's periodic evaluations, read from its curve file: the one at a given step, or the first
// step at which a metric reached a threshold.
#include "experiments/metrics_at_step.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "experiments/file_output.h"
#include "experiments/results_table.h"

namespace pathbench {

namespace {

// The evaluation lines of a result's curve ({"step": …, "eval": {split: metrics}}), in
// file order; an Error naming the file when the result has no readable curve.
std::vector<json> curve_evaluations(const json& result, const char* option) {
  const std::string path = result.value("path", "?");
  if (!result.contains("curve") || !result["curve"].is_string())
    throw Error(fmt::format("result '{}' names no curve file, so {} cannot read its evaluations", path, option));
  const std::string curve = (std::filesystem::path(path).parent_path() / result["curve"].get<std::string>()).string();
  if (!std::filesystem::is_regular_file(curve))
    throw Error(fmt::format("result '{}': its curve file '{}' is missing", path, curve));
  std::vector<json> evaluations;
  std::istringstream lines(read_file(curve));
  std::string line;
  while (std::getline(lines, line)) {
    json entry = json::parse(line, nullptr, false);
    if (entry.is_object() && entry.contains("eval") && entry["eval"].is_object())
      evaluations.push_back(std::move(entry));
  }
  return evaluations;
}

// Whether a result's curve is read: a finished run's, or an interrupted one's up to where it stopped
// (other statuses are left out of tables anyway).
bool curve_is_read(const json& result) {
  const std::string status = result.value("status", "");
  return status == "done" || status == "interrupted";
}

}  // namespace

int64_t use_metrics_at_step(std::vector<json>& results, int64_t step) {
  // A step past every run's configured training steps reads nothing but final metrics: a mistake.
  int64_t interrupted = 0, longest = -1;  // the most steps a run whose curve is read is configured for
  for (const json& r : results) {
    if (!curve_is_read(r)) continue;
    const json steps = r.value("config", json::object()).value("training", json::object()).value("steps", json());
    if (!steps.is_number_integer()) {  // unknown: no check
      longest = -1;
      break;
    }
    longest = std::max(longest, steps.get<int64_t>());
  }
  if (longest >= 0 && longest < step)
    throw Error(fmt::format("--at-step {}: past every run's training (the longest has {} steps)", step, longest));
  for (json& r : results) {
    if (!curve_is_read(r)) continue;
    // A finished run that ended before `step` keeps its last metrics; an interrupted one keeps none.
    if (r.value("steps_done", int64_t(0)) < step) continue;
    json metrics;
    for (const json& e : curve_evaluations(r, "--at-step"))
      if (e.value("step", int64_t(-1)) == step) {
        metrics = e["eval"];
        break;
      }
    if (metrics.is_null())
      throw Error(fmt::format("result '{}' has no evaluation at step {} in its curve '{}' (its config evaluates every "
                              "{} steps)",
                              r.value("path", "?"), step, r["curve"].get<std::string>(),
                              r["config"]["training"].value("eval_every", int64_t(0))));
    r["metrics"] = metrics;
    interrupted += r["status"] == "interrupted";
  }
  return interrupted;
}

std::set<std::string> use_first_step_reaching(std::vector<json>& results, const std::string& metric, double threshold) {
  std::set<std::string> used;
  for (json& r : results) {
    if (!curve_is_read(r)) continue;
    const std::vector<json> evaluations = curve_evaluations(r, "--first-step");
    if (evaluations.empty() && r["status"] == "interrupted") continue;  // stopped before its first one
    const std::string m = metric.empty() ? r.value("primary_metric", "") : metric;
    const bool higher_is_better = pathbench::higher_is_better(r, m);
    used.insert(m);
    std::map<std::string, json> first;  // split → step, or null while not reached
    std::map<std::string, int64_t> last;  // split → the step of its last evaluation
    std::set<std::string> known;         // the metrics the evaluations have
    for (const json& e : evaluations)
      for (const auto& [split, values] : e["eval"].items()) {
        json& step = first.emplace(split, nullptr).first->second;
        last[split] = e.value("step", int64_t(0));
        if (!values.is_object()) continue;
        for (const auto& [key, value] : values.items()) known.insert(key);
        const json value = values.value(m, json());
        if (!step.is_null() || !value.is_number()) continue;
        const double v = value.get<double>();
        if (higher_is_better ? v >= threshold : v <= threshold) step = e.value("step", int64_t(0));
      }
    if (!known.count(m))
      throw Error(fmt::format("--first-step: metric '{}' is not in the evaluations of '{}' (they have: {})", m,
                              r.value("path", "?"), fmt::join(known, ", ")));
    json metrics = json::object();
    for (const auto& [split, step] : first) metrics[split] = json{{"first_step", step}, {"evaluated_to", last[split]}};
    r["metrics"] = metrics;
    r["primary_metric"] = "first_step";
    r["higher_is_better"] = false;
  }
  return used;
}

}  // namespace pathbench
