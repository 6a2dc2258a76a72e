// A task config given on the command line: inline JSON or the path of a file holding it (a task
// config, or a run config whose "task" block is taken).
#pragma once
#include <string>

#include "core/options.h"

namespace pathbench {

// The argument is JSON when it starts with '{', otherwise a file holding JSON. A run config's
// "task" block is taken when the object has no "name" of its own. `where` is set to what errors
// should name: `inline_name` for inline JSON, else the path (+ ": task").
json load_task_config(const std::string& argument, const std::string& inline_name, std::string& where);

}  // namespace pathbench
