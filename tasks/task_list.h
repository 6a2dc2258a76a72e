// The registry entry of each task, one function per task file, listed by tasks/registry.cpp.
#pragma once
#include "tasks/task.h"

namespace pathbench {

TaskInfo flipflop_task();
TaskInfo word_problem_task();
TaskInfo phonebook_task();
TaskInfo mqrar_task();

}  // namespace pathbench
