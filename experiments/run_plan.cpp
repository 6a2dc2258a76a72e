// Sweep planning: expansion, validation of every run, duplicate detection.
#include "experiments/run_plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "core/error.h"
#include "experiments/file_output.h"
#include "experiments/result_file.h"

namespace pathbench {

json load_config_file(const std::string& path) {
  const std::string text = read_file(path);
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(fmt::format("{}: not valid JSON ({})", path, e.what()));
  }
}

namespace {

// "grid: model.encoding × 2, seed × 3; zip: model.encoding_options × 6": where repeated runs come from
// (a key moved out of a zip block by --set leaves the keys that were zipped with it behind).
std::string sweep_shape(const Sweep& sweep) {
  std::vector<std::string> blocks;
  for (const auto& [name, axes] : {std::pair{"grid", &sweep.grid}, std::pair{"zip", &sweep.zip}}) {
    std::vector<std::string> keys;
    for (const auto& [key, values] : *axes) keys.push_back(fmt::format("{} × {}", key, values.size()));
    if (!keys.empty()) blocks.push_back(fmt::format("{}: {}", name, fmt::join(keys, ", ")));
  }
  return fmt::format("{}", fmt::join(blocks, "; "));
}

}  // namespace

std::vector<PlannedRun> plan_runs(const json& doc, const std::vector<Override>& overrides, const std::string& where,
                                  const TaskProvider& tasks) {
  if (is_result_document(doc))
    throw Error(fmt::format("{}: a run's result, not a config (its run config is the result's \"config\" object; "
                            "`pathbench replay --config` takes a result file as it is)",
                            where));
  const Sweep sweep = make_sweep(doc, overrides, where);
  const std::vector<ExpandedRun> expanded = expand_sweep(sweep, where);
  std::vector<PlannedRun> runs;
  std::map<std::string, size_t> by_hash;
  for (size_t i = 0; i < expanded.size(); ++i) {
    std::string axes;
    for (const auto& [key, value] : expanded[i].axes.items()) axes += (axes.empty() ? "" : ", ") + key + "=" + value.dump();
    PlannedRun run;
    run.label = fmt::format("run {} of {}{}", i + 1, expanded.size(), axes.empty() ? "" : " (" + axes + ")");
    const std::string run_where = expanded.size() == 1 ? where : fmt::format("{} [{}]", where, run.label);
    run.config = RunConfig::from_json(expanded[i].config, run_where, tasks);
    run.axes = expanded[i].axes;
    run.id = run.config.id();
    run.hash = run.config.hash();
    const auto [it, fresh] = by_hash.emplace(run.hash, i);
    if (!fresh)
      throw Error(fmt::format("{}: {} and {} are the same run (hash {}); remove the repeated sweep value ({})", where,
                              runs[it->second].label, run.label, run.hash, sweep_shape(sweep)));
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace pathbench
