// The median of timings, as the benchmarks report them (`bench`, `bench-tasks`, `bench-attention`).
#pragma once
#include <algorithm>
#include <vector>

namespace pathbench {

// The upper median (the middle element after sorting; for an even count the larger of the two
// middle ones) of a non-empty list.
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace pathbench
