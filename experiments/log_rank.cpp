// The log-rank test (log_rank.h).
#include "experiments/log_rank.h"

#include <cmath>
#include <set>
#include <utility>

namespace pathbench {

double log_rank_two_sided(const std::vector<TimeToEvent>& a, const std::vector<TimeToEvent>& b) {
  std::set<double> event_times;
  for (const auto* group : {&a, &b})
    for (const TimeToEvent& t : *group)
      if (t.event) event_times.insert(t.time);
  // A group's runs at risk at `time` (not yet past it) and its events there.
  const auto count_at = [](const std::vector<TimeToEvent>& group, double time) {
    double at_risk = 0, events = 0;
    for (const TimeToEvent& t : group) {
      at_risk += t.time >= time;
      events += t.event && t.time == time;
    }
    return std::pair{at_risk, events};
  };
  double observed_minus_expected = 0.0, variance = 0.0;
  for (double time : event_times) {
    const auto [at_risk_a, events_a] = count_at(a, time);
    const auto [at_risk_b, events_b] = count_at(b, time);
    const double at_risk = at_risk_a + at_risk_b, events = events_a + events_b;
    observed_minus_expected += events_a - events * at_risk_a / at_risk;
    if (at_risk > 1)
      variance += events * (at_risk_a / at_risk) * (at_risk_b / at_risk) * (at_risk - events) / (at_risk - 1);
  }
  if (variance <= 0.0) return 1.0;
  const double chi_square = observed_minus_expected * observed_minus_expected / variance;
  return std::erfc(std::sqrt(chi_square / 2.0));
}

}  // namespace pathbench
