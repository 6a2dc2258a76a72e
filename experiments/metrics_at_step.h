// Tables from each run's periodic evaluations (its curve file) instead of its final metrics:
// `pathbench table --at-step N` (the metrics at step N, e.g. to screen many short runs by how far
// they got early) and `--first-step X` (the step at which a metric first reached X: how fast each
// run learned, for runs whose outcome is a transition).
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/options.h"

namespace pathbench {

// Replaces the "metrics" of each finished result, and of each interrupted one that got past `step`,
// by the evaluation at `step` in its curve file (the result's "curve", next to its "path"); other
// results are left as they are (tables leave them out, an interrupted one having no metrics). A
// finished run that ended before `step` (it stopped early, or was shorter) keeps its final metrics,
// as a curve plot holds its last value. A run without an evaluation at `step` that went past it, or
// without a readable curve, is an Error naming the file. Returns how many interrupted results it
// gave metrics.
int64_t use_metrics_at_step(std::vector<json>& results, int64_t step);

// Replaces the metrics of each finished result, and of each interrupted one with an evaluation, by
// {split: {"first_step": S, "evaluated_to": L}}, S the step of the first evaluation in its curve at
// which `metric` (the result's primary metric when empty) on that split reached `threshold` (>= it
// where higher is better, <= it otherwise), or null where it never did, and L the step of the
// split's last evaluation (where a run that never reached it is known to be still short of it: an
// interrupted run's last evaluation is where it stopped); the results' primary metric becomes
// "first_step", lower being better. The same errors as above.
// Returns the metrics used (the primary metrics where `metric` is empty), for the table's note.
std::set<std::string> use_first_step_reaching(std::vector<json>& results, const std::string& metric, double threshold);

}  // namespace pathbench
