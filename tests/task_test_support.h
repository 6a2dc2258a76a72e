// Helpers shared by the task tests.
#pragma once
#include <memory>
#include <string>

#include "tasks/task.h"

namespace pathbench::testing {

inline std::unique_ptr<Task> make(const json& config) { return make_task(config, "test config"); }

// The sequence an example predicts, as text (targets rendered with the task's separator).
inline std::string target_text(const Task& task, const Example& e) { return task.vocabulary().render(e.targets); }

// The model's next-token input is BOS followed by the targets shifted by one.
inline bool is_shifted_by_one(const Example& e, int32_t bos) {
  if (e.tokens.empty() || e.tokens[0] != bos) return false;
  for (size_t t = 1; t < e.tokens.size(); ++t)
    if (e.tokens[t] != e.targets[t - 1]) return false;
  return true;
}

}  // namespace pathbench::testing
