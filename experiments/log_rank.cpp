// The log-rank test (log_rank.h).
#include "experiments/log_rank.h"

#include <cmath>
#include <set>

namespace pathbench {

double log_rank_two_sided(const std::vector<TimeToEvent>& a, const std::vector<TimeToEvent>& b) {
  std::set<double> event_times;
  for (const auto* group : {&a, &b})
    for (const TimeToEvent& t : *group)
      if (t.event) event_times.insert(t.time);
  double observed_minus_expected = 0.0, variance = 0.0;
  for (double time : event_times) {
    double at_risk_a = 0, at_risk_b = 0, events_a = 0, events_b = 0;
    for (const TimeToEvent& t : a) {
      at_risk_a += t.time >= time;
      events_a += t.event && t.time == time;
    }
    for (const TimeToEvent& t : b) {
      at_risk_b += t.time >= time;
      events_b += t.event && t.time == time;
    }
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
