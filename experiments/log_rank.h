// The log-rank test of two groups of times to an event, some of them censored: used by `pathbench
// table --first-step X --against ROW` to say whether one encoding's runs reach X sooner than
// another's, counting the runs that never did as still short of it at their last evaluation.
#pragma once
#include <vector>

namespace pathbench {

// One run: the step at which it reached the event (event = true), or its last step without it
// (event = false: censored there, it may have reached the event later).
struct TimeToEvent {
  double time;
  bool event;
};

// The two-sided p-value of the log-rank (Mantel–Cox) test that both groups share one hazard:
// at each time with an event, the events of group a against those expected from the runs still at
// risk in both groups (a run is at risk at times up to its own, censored ones included), summed,
// squared over the summed hypergeometric variance, read as χ² with one degree of freedom — the
// statistic R's survival::survdiff gives. 1 where no time has an event in a group of two or more
// at risk (no information).
double log_rank_two_sided(const std::vector<TimeToEvent>& a, const std::vector<TimeToEvent>& b);

}  // namespace pathbench
