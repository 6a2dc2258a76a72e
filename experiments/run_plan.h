// From a config file (and overrides) to the validated list of runs: expand the sweep, parse every
// run strictly, and reject duplicates, all before anything runs.
#pragma once
#include <string>
#include <vector>

#include "experiments/run_config.h"
#include "experiments/sweep.h"

namespace pathbench {

struct PlannedRun {
  RunConfig config;
  json axes;           // dotted key → value of each sweep axis
  std::string id;      // readable id
  std::string hash;    // hash of the semantic config
  std::string label;   // "run 3 of 12 (model.encoding=\"path\", seed=1)", for messages

  std::string file_stem() const { return id + "-" + hash; }
};

// Parses a JSON config file; errors name the file (and the parser's position).
json load_config_file(const std::string& path);

// Expands and validates every run of `doc`. `where` names the file in errors.
std::vector<PlannedRun> plan_runs(const json& doc, const std::vector<Override>& overrides, const std::string& where,
                                  const TaskProvider& tasks);

}  // namespace pathbench
