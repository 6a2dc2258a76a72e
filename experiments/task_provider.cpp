// Task providers: look a task block's name up in a list of tasks and resolve its options.
#include "experiments/task_provider.h"

#include <fmt/format.h>

#include "core/error.h"

namespace pathbench {

namespace {

struct Resolved {
  const TaskInfo* info;
  json options;  // without "name"
};

Resolved resolve_block(const std::vector<TaskInfo>& tasks, const json& block, const std::string& where) {
  if (!block.is_object() || !block.contains("name") || !block["name"].is_string())
    throw Error(fmt::format("{}: expected an object with a string key 'name' naming the task, got {}", where,
                            block.dump()));
  const std::string name = block["name"];
  std::vector<std::string> known;
  for (const TaskInfo& info : tasks) {
    known.push_back(info.name);
    if (info.name != name) continue;
    json options = block;
    options.erase("name");
    return Resolved{&info, resolve_options(info.options, options, where)};
  }
  throw Error(fmt::format("{}: key 'name' has unknown task '{}' (known: {})", where, name,
                          known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))));
}

}  // namespace

TaskProvider task_provider(std::vector<TaskInfo> list) {
  auto tasks = std::make_shared<const std::vector<TaskInfo>>(std::move(list));
  return TaskProvider{[tasks](const json& block, const std::string& where) {
                        json out = resolve_block(*tasks, block, where).options;
                        out["name"] = block["name"];
                        return out;
                      },
                      [tasks](const json& block, const std::string& where) {
                        const Resolved r = resolve_block(*tasks, block, where);
                        return r.info->make(r.options, where);
                      }};
}

TaskProvider registry_task_provider() { return task_provider(task_registry()); }

}  // namespace pathbench
