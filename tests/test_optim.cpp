// AdamW update against its formula, the warmup + cosine schedule, and global-norm clipping.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/optim/adamw.h"

using namespace pathbench;

TEST_CASE("AdamW matches the decoupled-weight-decay formula", "[optim]") {
  ParameterSet<double> params;
  auto w = params.add("w", {2});
  auto g = params.add("g", {1}, false);  // no weight decay
  params.value(w)[0] = 1.0;
  params.value(w)[1] = -2.0;
  params.value(g)[0] = 0.5;
  AdamWConfig cfg{0.9, 0.99, 1e-8, 0.1};
  AdamW<double> opt(params, cfg);
  const double grads[2][3] = {{0.3, -0.1, 0.2}, {-0.5, 0.4, 0.1}};
  double p[3] = {1.0, -2.0, 0.5}, m[3] = {}, v[3] = {};
  const bool decays[3] = {true, true, false};
  for (int t = 1; t <= 2; ++t) {
    const double lr = 0.01 * t;
    for (int i = 0; i < 3; ++i) params.grads()[i] = grads[t - 1][i];
    opt.step(params, lr);
    for (int i = 0; i < 3; ++i) {
      m[i] = 0.9 * m[i] + 0.1 * grads[t - 1][i];
      v[i] = 0.99 * v[i] + 0.01 * grads[t - 1][i] * grads[t - 1][i];
      const double mhat = m[i] / (1 - std::pow(0.9, t)), vhat = v[i] / (1 - std::pow(0.99, t));
      if (decays[i]) p[i] -= lr * 0.1 * p[i];
      p[i] -= lr * mhat / (std::sqrt(vhat) + 1e-8);
      CHECK(params.values()[i] == Approx(p[i]).epsilon(1e-12));
    }
  }
}

TEST_CASE("the schedule warms up linearly and decays by cosine to min_ratio", "[optim]") {
  LrSchedule s{1e-3, 10, 110, 0.1};
  CHECK(s.at(0) == Approx(1e-4));
  CHECK(s.at(9) == Approx(1e-3));
  CHECK(s.at(10) == Approx(1e-3));
  CHECK(s.at(60) == Approx(1e-3 * (0.1 + 0.9 * 0.5)));
  CHECK(s.at(110) == Approx(1e-4));
  CHECK(s.at(500) == Approx(1e-4));
}

TEST_CASE("gradient clipping scales to the max global norm", "[optim]") {
  std::vector<float> g = {3.0f, 4.0f};
  CHECK(clip_grad_norm(g, 10.0) == Approx(5.0));
  CHECK(g[0] == 3.0f);
  CHECK(clip_grad_norm(g, 1.0) == Approx(5.0));
  CHECK(std::hypot(g[0], g[1]) == Approx(1.0).epsilon(1e-6));
  CHECK(g[0] / g[1] == Approx(0.75));
}
