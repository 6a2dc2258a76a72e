// Held-out draw starts shared by the processes of a sweep through files in its output folder.
// Drawing an evaluation example the first time costs about eight draws (holdout.h); with its start
// in a file, every later run of the sweep that evaluates the same split (in any worker process,
// host or Slurm task) draws it once. The files are a cache: a missing, short, damaged or foreign
// one is ignored (and rewritten), never an error, and the examples are the same either way (a
// start from a file is checked to give a held-out example when drawn).
//
// <dir>/<16 hex digits>.starts, the digits a hash of the key: lines "pathbench held-out starts 1",
// the draw function's text, "split NAME", "seed N", the count; then count uint64 starts in the
// machine's byte order, those of examples 0 … count − 1.
#pragma once
#include <cstdint>
#include <string>

#include "tasks/task.h"

namespace pathbench {

// Remembers in this process the starts the file of (task, split, seed) holds, for up to `count`
// examples. Nothing for a task without a draw function id.
void load_held_out_starts(const std::string& dir, const Task& task, const std::string& split, uint64_t seed,
                          uint64_t count);

// Writes the file of (task, split, seed) when this process remembers the starts of more of its
// first examples (up to `count`, the leading run without a gap) than the file holds. Atomic (a
// temporary file, then a rename); a folder that cannot be written leaves things as they were.
void save_held_out_starts(const std::string& dir, const Task& task, const std::string& split, uint64_t seed,
                          uint64_t count);

}  // namespace pathbench
