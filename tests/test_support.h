// Shared test helpers: seeded random buffers, relative error, and central finite differences of
// a scalar function, all in float64.
#pragma once
#include <cmath>
#include <functional>
#include <limits>
#include <omp.h>
#include <vector>

#include "core/rng.h"

namespace pathbench::testing {

inline std::vector<double> random_vector(size_t n, uint64_t seed, double scale = 1.0) {
  CounterRng rng(seed, "test");
  std::vector<double> v(n);
  for (auto& x : v) x = scale * rng.normal();
  return v;
}

inline double norm(const std::vector<double>& a) {
  double s = 0;
  for (double x : a) s += x * x;
  return std::sqrt(s);
}

// ‖got − want‖ / ‖want‖ (absolute when want is 0); infinite when the sizes differ or got holds a
// non-finite value (an unwritten, NaN-poisoned GPU output, say).
template <typename A, typename B>
double relative_error(const std::vector<A>& got, const std::vector<B>& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(double(got[i]))) return std::numeric_limits<double>::infinity();
    const double d = double(got[i]) - double(want[i]);
    num += d * d;
    den += double(want[i]) * double(want[i]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Central differences of f with respect to every element of x (x is restored afterwards).
inline std::vector<double> finite_difference(std::vector<double>& x, const std::function<double()>& f,
                                             double h = 1e-6) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double up = f();
    x[i] = saved - h;
    const double down = f();
    x[i] = saved;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

// Finite differences run thousands of tiny forwards: one thread avoids OpenMP overhead on them.
struct SingleThread {
  int saved = omp_get_max_threads();
  SingleThread() { omp_set_num_threads(1); }
  ~SingleThread() { omp_set_num_threads(saved); }
};

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace pathbench::testing
