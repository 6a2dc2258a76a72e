// Where runs get their task from: by name from a list of tasks, by default the task registry
// (tests supply their own small fixture tasks this way).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tasks/task.h"

namespace pathbench {

struct TaskProvider {
  // The `task` block {"name": ..., options} with every option resolved (defaults filled in): the
  // canonical form that run hashes see. Throws pathbench::Error naming `where`, the key and the value.
  std::function<json(const json& block, const std::string& where)> canonical;
  // Builds the task from a block.
  std::function<std::unique_ptr<Task>(const json& block, const std::string& where)> make;
};

// Tasks chosen by name from `tasks`.
TaskProvider task_provider(std::vector<TaskInfo> tasks);
// Tasks of the registry (tasks/task.h).
TaskProvider registry_task_provider();

}  // namespace pathbench
