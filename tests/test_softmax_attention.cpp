// Causal softmax attention (with and without the log-gate bias) and RoPE: forward against float64
// brute force, gradients against finite differences, RoPE's relative-position property.
#include <catch2/catch.hpp>

#include <limits>

#include "core/attention/rope/rope.h"
#include "core/attention/softmax/softmax_attention.h"
#include "tests/test_support.h"

using namespace pathbench;
using namespace pathbench::testing;

namespace {

// o_i = Σ_{j≤i} softmax_j(s·q_i·k_j + g·(c_i − c_j)) v_j, one slice at a time.
std::vector<double> brute_force_attention(const SoftmaxAttentionArgs<double>& a) {
  const int64_t len = a.length, d = a.head_dim;
  std::vector<double> o(a.batch_heads * len * d, 0.0);
  for (int64_t s = 0; s < a.batch_heads; ++s)
    for (int64_t i = 0; i < len; ++i) {
      std::vector<double> logits(i + 1);
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j <= i; ++j) {
        double l = 0;
        for (int64_t x = 0; x < d; ++x) l += a.q[(s * len + i) * d + x] * a.k[(s * len + j) * d + x];
        l *= a.scale;
        if (a.cum_log_gate) l += a.gate_scale * (a.cum_log_gate[s * len + i] - a.cum_log_gate[s * len + j]);
        logits[j] = l;
        mx = std::max(mx, l);
      }
      double z = 0;
      for (auto& l : logits) z += (l = std::exp(l - mx));
      for (int64_t j = 0; j <= i; ++j)
        for (int64_t x = 0; x < d; ++x) o[(s * len + i) * d + x] += logits[j] / z * a.v[(s * len + j) * d + x];
    }
  return o;
}

}  // namespace

TEST_CASE("softmax attention matches brute force and finite differences", "[attention]") {
  for (bool with_gate : {false, true})
    for (auto [bh, len, d] : {std::tuple{1, 1, 3}, {2, 5, 4}, {3, 70, 2}, {1, 129, 5}}) {
      CAPTURE(with_gate, bh, len, d);
      auto q = random_vector(bh * len * d, 1), k = random_vector(bh * len * d, 2), v = random_vector(bh * len * d, 3);
      auto c = random_vector(bh * len, 4), d_o = random_vector(bh * len * d, 5);
      SoftmaxAttentionArgs<double> a{bh, len, d, 0.7, q.data(), k.data(), v.data(), with_gate ? c.data() : nullptr, 0.9};
      std::vector<double> o(bh * len * d), lse(bh * len);
      softmax_attention_forward(a, o.data(), lse.data());
      REQUIRE(relative_error(o, brute_force_attention(a)) < 1e-12);

      std::vector<double> dq(o.size()), dk(o.size()), dv(o.size()), dc(c.size());
      softmax_attention_backward(a, o.data(), lse.data(), d_o.data(), dq.data(), dk.data(), dv.data(),
                                 with_gate ? dc.data() : nullptr);
      if (len > 70) continue;  // finite differences of every input are slow at long T; the short cases cover the math
      auto loss = [&]() { return dot(brute_force_attention(a), d_o); };
      CHECK(relative_error(dq, finite_difference(q, loss)) < 1e-7);
      CHECK(relative_error(dk, finite_difference(k, loss)) < 1e-7);
      CHECK(relative_error(dv, finite_difference(v, loss)) < 1e-7);
      if (with_gate && len > 1) CHECK(relative_error(dc, finite_difference(c, loss)) < 1e-7);
    }
}

TEST_CASE("rope rotates pairs by position and is undone by its inverse", "[attention]") {
  const int64_t bh = 2, len = 6, d = 8;
  const double base = 10000.0;
  auto x = random_vector(bh * len * d, 6);
  auto rotated = x;
  rope_rotate(rotated.data(), bh, len, d, base, false);
  for (int64_t s = 0; s < bh; ++s)
    for (int64_t t = 0; t < len; ++t)
      for (int64_t m = 0; m < d / 2; ++m) {
        const double angle = double(t) * std::pow(base, -2.0 * m / d);
        const double a = x[(s * len + t) * d + m], b = x[(s * len + t) * d + m + d / 2];
        REQUIRE(rotated[(s * len + t) * d + m] == Approx(a * std::cos(angle) - b * std::sin(angle)).margin(1e-12));
        REQUIRE(rotated[(s * len + t) * d + m + d / 2] == Approx(a * std::sin(angle) + b * std::cos(angle)).margin(1e-12));
      }
  rope_rotate(rotated.data(), bh, len, d, base, true);
  CHECK(relative_error(rotated, x) < 1e-13);
}

TEST_CASE("rope logits are unchanged when every position shifts by the same amount", "[attention]") {
  const int64_t len = 9, d = 6;
  auto q = random_vector(len * d, 7), k = random_vector(len * d, 8);
  auto logits_at = [&](int64_t offset) {
    auto qr = q, kr = k;
    rope_rotate(qr.data(), 1, len, d, 10000.0, false, offset);
    rope_rotate(kr.data(), 1, len, d, 10000.0, false, offset);
    std::vector<double> l(len * len);
    for (int64_t i = 0; i < len; ++i)
      for (int64_t j = 0; j < len; ++j)
        for (int64_t x = 0; x < d; ++x) l[i * len + j] += qr[i * d + x] * kr[j * d + x];
    return l;
  };
  auto base_logits = logits_at(0);
  CHECK(relative_error(logits_at(37), base_logits) < 1e-12);
  CHECK(relative_error(logits_at(1000), base_logits) < 1e-11);
  // And they do depend on position: the unrotated logits differ.
  CHECK(relative_error(logits_at(0), [&] {
          std::vector<double> l(len * len);
          for (int64_t i = 0; i < len; ++i)
            for (int64_t j = 0; j < len; ++j)
              for (int64_t x = 0; x < d; ++x) l[i * len + j] += q[i * d + x] * k[j * d + x];
          return l;
        }()) > 1e-3);
}
