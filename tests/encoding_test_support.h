// Helpers of the encoding tests: seeded random tensors, central finite differences, and building
// a registered encoding with its own parameter set in float64.
#pragma once
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/attention/registry.h"
#include "core/rng.h"
#include "tests/test_support.h"

namespace pathbench::test {

// Seeded normal values; `stream` separates the tensors of one case.
inline std::vector<double> random_normal(size_t n, uint64_t seed, const std::string& stream, double scale = 1.0) {
  return testing::random_vector(n, combine_key(seed, hash_string(stream)), scale);
}

// Unit vectors: n rows of dimension d.
inline std::vector<double> random_unit_rows(size_t n, size_t d, uint64_t seed, const std::string& stream) {
  std::vector<double> out = random_normal(n * d, seed, stream);
  for (size_t r = 0; r < n; ++r) {
    double norm = 0;
    for (size_t i = 0; i < d; ++i) norm += out[r * d + i] * out[r * d + i];
    for (size_t i = 0; i < d; ++i) out[r * d + i] /= std::sqrt(norm);
  }
  return out;
}

inline std::vector<double> random_uniform(size_t n, double lo, double hi, uint64_t seed, const std::string& stream) {
  CounterRng rng(seed, stream);
  std::vector<double> out(n);
  for (auto& x : out) x = lo + (hi - lo) * rng.uniform();
  return out;
}

using testing::dot;
using testing::SingleThread;

inline double max_abs_diff(const double* a, const double* b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}
inline double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  return max_abs_diff(a.data(), b.data(), a.size());
}

// Compares analytic[i] = d loss / d x[i] with central differences for every entry of x (or an
// evenly spread subset of max_entries when x is larger). loss() evaluates at the current x.
inline void check_gradient(double* x, const double* analytic, size_t n, const std::function<double()>& loss,
                           const std::string& what, size_t max_entries = 48, double eps = 1e-6) {
  const size_t step = std::max<size_t>(1, n / max_entries);
  for (size_t i = 0; i < n; i += step) {
    const double saved = x[i];
    x[i] = saved + eps;
    const double up = loss();
    x[i] = saved - eps;
    const double down = loss();
    x[i] = saved;
    const double numeric = (up - down) / (2 * eps);
    INFO(fmt::format("{}[{}]: analytic {:.10g}, finite difference {:.10g}", what, i, analytic[i], numeric));
    CHECK(std::abs(numeric - analytic[i]) <= 1e-6 * std::max(1.0, std::abs(numeric)));
  }
}
inline void check_gradient(std::vector<double>& x, const std::vector<double>& analytic,
                           const std::function<double()>& loss, const std::string& what, size_t max_entries = 48) {
  REQUIRE(x.size() == analytic.size());
  check_gradient(x.data(), analytic.data(), x.size(), loss, what, max_entries);
}

// A registered encoding in float64 with its own parameters, on random inputs x, q, k, v.
struct EncodingCase {
  AttentionDims dims;
  ParameterSet<double> params;
  std::unique_ptr<PositionEncoding<double>> encoding;
  std::vector<double> x, q, k, v;  // [B, T, C], [B, H, T, D] ×3

  EncodingCase(const std::string& name, const json& options, AttentionDims d, uint64_t seed) : dims(d) {
    EncodingSetup<double> setup{options, dims, "layer.", &params, 0.02};
    encoding = make_encoding<double>(name, options, setup, "test");
    encoding->init_parameters(params, seed);
    const size_t per_head = d.batch * d.heads * d.length * d.head_dim;
    x = random_normal(d.batch * d.length * d.width, seed, "x");
    q = random_normal(per_head, seed, "q");
    k = random_normal(per_head, seed, "k");
    v = random_normal(per_head, seed, "v");
  }

  AttentionInputs<double> inputs() const { return {dims, x.data(), q.data(), k.data(), v.data()}; }

  std::vector<double> forward() {
    std::vector<double> o(q.size());
    encoding->forward(params, inputs(), o.data());
    return o;
  }
};

}  // namespace pathbench::test
