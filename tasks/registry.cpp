// The list of registered tasks, construction by name, and vocabulary rendering.
#include <fmt/format.h>

#include "core/error.h"
#include "tasks/task.h"
#include "tasks/task_list.h"

namespace pathbench {

// One entry per task, declared in tasks/task_list.h and defined in its own file.

const std::vector<TaskInfo>& task_registry() {
  static const std::vector<TaskInfo> registry = {
      flipflop_task(),
      word_problem_task(),
      phonebook_task(),
      mqrar_task(),
  };
  return registry;
}

std::unique_ptr<Task> make_task(const json& config, const std::string& where) {
  if (!config.is_object() || !config.contains("name") || !config["name"].is_string())
    throw Error(fmt::format("{}: expected an object with a string key 'name' naming the task", where));
  const std::string name = config["name"];
  std::vector<std::string> known;
  for (const auto& info : task_registry()) {
    known.push_back(info.name);
    if (info.name != name) continue;
    json options = config;
    options.erase("name");
    return info.make(resolve_options(info.options, options, where), where);
  }
  throw Error(fmt::format("{}: key 'name' has unknown task '{}' (known: {})", where, name, fmt::join(known, ", ")));
}

std::string Vocabulary::render(const std::vector<int32_t>& tokens, const std::string& separator) const {
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i) out += separator;
    out += (tokens[i] >= 0 && tokens[i] < size()) ? symbols[tokens[i]] : fmt::format("<{}>", tokens[i]);
  }
  return out;
}

}  // namespace pathbench
