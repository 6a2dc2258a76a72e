// Loading a task config from a CLI argument.
#include "experiments/task_argument.h"

#include <fmt/format.h>

#include "core/error.h"
#include "experiments/file_output.h"

namespace pathbench {

json load_task_config(const std::string& argument, const std::string& inline_name, std::string& where) {
  const auto first = argument.find_first_not_of(" \t\n");
  const bool inline_json = first != std::string::npos && argument[first] == '{';
  where = inline_json ? inline_name : argument;
  json config;
  try {
    config = json::parse(inline_json ? argument : read_file(argument));
  } catch (const json::parse_error& e) {
    throw Error(fmt::format("{}: invalid JSON ({})", where, e.what()));
  }
  // A run config (its "task" is an object; no task has an option named "task"): take its task block.
  if (config.is_object() && config.contains("task") && config["task"].is_object()) {
    where += ": task";
    return config["task"];
  }
  return config;
}

}  // namespace pathbench
