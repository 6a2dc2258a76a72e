// `pathbench table --at-step N`: a table of the metrics each run had at its periodic evaluation at
// step N (from its curve file) instead of its final ones, e.g. to screen many short runs by how far
// they got early.
#pragma once
#include <cstdint>
#include <vector>

#include "core/options.h"

namespace pathbench {

// Replaces each finished result's "metrics" by the evaluation at `step` in its curve file (the
// result's "curve", next to its "path"); other statuses are left as they are (tables leave them
// out). A run that ended before `step` (it stopped early, or was shorter) keeps its final metrics,
// as a curve plot holds its last value. A run without an evaluation at `step` that went past it, or
// without a readable curve, is an Error naming the file.
void use_metrics_at_step(std::vector<json>& results, int64_t step);

}  // namespace pathbench
