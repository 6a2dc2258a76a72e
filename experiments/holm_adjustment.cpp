// Holm's step-down adjustment (holm_adjustment.h).
#include "experiments/holm_adjustment.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace pathbench {

std::vector<double> holm_adjusted(const std::vector<double>& p) {
  for (double v : p)
    if (!(v >= 0.0 && v <= 1.0)) throw std::invalid_argument("holm_adjusted: a p-value outside [0, 1]");
  const size_t m = p.size();
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  std::vector<double> adjusted(m);
  double running_max = 0.0;
  for (size_t rank = 0; rank < m; ++rank) {
    running_max = std::max(running_max, std::min(1.0, double(m - rank) * p[order[rank]]));
    adjusted[order[rank]] = running_max;
  }
  return adjusted;
}

}  // namespace pathbench
