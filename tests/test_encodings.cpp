// Conformance of every registered position encoding (gradients of q, k, v, the layer input and
// the encoding's parameters against central finite differences, supported head dimensions), and the
// FoX and stick-breaking kernels against float64 brute force, with their identities.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/attention/fox/fox.h"
#include "core/attention/sba/sba.h"
#include "core/attention/softmax/softmax_attention.h"
#include "encoding_test_support.h"

namespace pathbench {
namespace {

using test::check_gradient;
using test::EncodingCase;
using test::random_normal;

// β ≤ 2 − kClipEps in the clipped variants: loose enough that the random parameters of the
// gradient test clip some β (about a fifth), so the clip and its zero gradient are exercised.
constexpr double kClipEps = 0.5;

// Each registered encoding with its default options, plus the non-default switches.
std::vector<std::pair<std::string, json>> encoding_variants() {
  std::vector<std::pair<std::string, json>> out;
  for (const auto& name : encoding_names()) out.push_back({name, json::object()});
  out.push_back({"fox", {{"scale_gate", true}}});
  out.push_back({"sba", {{"remainder_to_current", true}}});
  out.push_back({"path", {{"rank", 3}, {"beta_clip_eps", kClipEps}}});
  out.push_back({"path_fox", {{"scale_gate", true}, {"beta_clip_eps", kClipEps}}});
  return out;
}

void check_encoding_gradients(const std::string& name, const json& options, AttentionDims dims, uint64_t seed) {
  INFO(fmt::format("{} {} B={} T={} H={} D={} C={}", name, options.dump(), dims.batch, dims.length, dims.heads,
                   dims.head_dim, dims.width));
  EncodingCase c(name, options, dims, seed);
  // Parameters away from their initialization so every path through them carries gradient.
  auto& values = c.params.values();
  values = random_normal(values.size(), seed, "params", 0.5);
  const std::vector<double> d_o = random_normal(c.q.size(), seed, "do");
  auto loss = [&] { return test::dot(c.forward(), d_o); };

  std::vector<double> o = c.forward();
  std::vector<double> dq(c.q.size()), dk(c.q.size()), dv(c.q.size()), dx(c.x.size(), 0.0);
  c.params.zero_grad();
  c.encoding->backward(c.params, c.inputs(), o.data(), d_o.data(), dq.data(), dk.data(), dv.data(), dx.data());
  check_gradient(c.q, dq, loss, "dq");
  check_gradient(c.k, dk, loss, "dk");
  check_gradient(c.v, dv, loss, "dv");
  check_gradient(c.x, dx, loss, "dx");
  const std::vector<double> grads = c.params.grads();
  for (const auto& e : c.params.entries()) {
    INFO(e.name);
    if (dims.length > 1) CHECK(std::any_of(grads.begin() + e.offset, grads.begin() + e.offset + e.size, [](double g) { return g != 0; }));
    check_gradient(values.data() + e.offset, grads.data() + e.offset, e.size, loss, e.name);
  }
}

TEST_CASE("every encoding's gradients match finite differences", "[encodings]") {
  test::SingleThread single;
  for (const auto& [name, options] : encoding_variants()) {
    const bool even_only = !find_encoding(name).head_dim_problem(3).empty();
    check_encoding_gradients(name, options, {2, 1, 2, 4, 6}, 1);                  // T = 1
    check_encoding_gradients(name, options, {1, 9, 2, even_only ? 4 : 3, 5}, 2);  // small odd sizes
    check_encoding_gradients(name, options, {1, 70, 1, 4, 4}, 3);                 // T past a 64-row block
  }
}

TEST_CASE("the β-clip variants of the gradient test do clip", "[encodings]") {
  // The same case with and without the clip: if no β reached the cap, the outputs would be equal
  // and the gradient test would say nothing about the clip.
  for (const std::string name : {"path", "path_fox"}) {
    INFO(name);
    std::vector<double> outputs[2];
    for (int clip = 0; clip < 2; ++clip) {
      EncodingCase c(name, clip ? json{{"beta_clip_eps", kClipEps}} : json::object(), {1, 70, 1, 4, 4}, 3);
      c.params.values() = random_normal(c.params.values().size(), 3, "params", 0.5);
      outputs[clip] = c.forward();
    }
    CHECK(outputs[0] != outputs[1]);
  }
}

TEST_CASE("every encoding supports head dimensions 16, 32, 64 and 128", "[encodings]") {
  test::SingleThread single;
  for (const auto& name : encoding_names()) {
    for (int64_t d : {16, 32, 64, 128}) {
      INFO(name << " D=" << d);
      CHECK(find_encoding(name).head_dim_problem(d).empty());
      EncodingCase c(name, json::object(), {1, 5, 2, d, 8}, 4);
      for (double x : c.forward()) REQUIRE(std::isfinite(x));
    }
    // The gradient test above runs at D ≤ 4; at the GPU's smallest head dimension too.
    check_encoding_gradients(name, json::object(), {1, 5, 1, 16, 8}, 5);
  }
}

// Plain float64 softmax attention with an optional bias g·(c_i − c_j), one slice.
std::vector<double> brute_softmax_attention(const double* q, const double* k, const double* v, const double* c,
                                            double gate_scale, int64_t len, int64_t d) {
  std::vector<double> o(len * d, 0.0);
  const double s = 1.0 / std::sqrt(double(d));
  for (int64_t i = 0; i < len; ++i) {
    std::vector<double> logit(i + 1);
    double mx = -1e300, sum = 0;
    for (int64_t j = 0; j <= i; ++j) {
      double z = 0;
      for (int64_t e = 0; e < d; ++e) z += q[i * d + e] * k[j * d + e];
      logit[j] = s * z + (c ? gate_scale * (c[i] - c[j]) : 0.0);
      mx = std::max(mx, logit[j]);
    }
    for (int64_t j = 0; j <= i; ++j) sum += logit[j] = std::exp(logit[j] - mx);
    for (int64_t j = 0; j <= i; ++j)
      for (int64_t e = 0; e < d; ++e) o[i * d + e] += logit[j] / sum * v[j * d + e];
  }
  return o;
}

TEST_CASE("fox matches brute force from its gate parameters", "[encodings]") {
  for (bool scale_gate : {false, true}) {
    const AttentionDims dims{2, 11, 2, 5, 7};
    EncodingCase c("fox", {{"scale_gate", scale_gate}}, dims, 5);
    auto& values = c.params.values();
    values = random_normal(values.size(), 5, "params", 0.7);
    const double* weight = c.params.value(c.params.find("layer.fox_gate_weight"));
    const double* bias = c.params.value(c.params.find("layer.fox_gate_bias"));
    const std::vector<double> o = c.forward();
    const double g = scale_gate ? 1.0 / std::sqrt(5.0) : 1.0;
    for (int64_t b = 0; b < dims.batch; ++b)
      for (int64_t h = 0; h < dims.heads; ++h) {
        std::vector<double> cum(dims.length);
        double acc = 0;
        for (int64_t t = 0; t < dims.length; ++t) {
          double a = bias[h];
          for (int64_t ci = 0; ci < dims.width; ++ci) a += weight[h * dims.width + ci] * c.x[(b * dims.length + t) * dims.width + ci];
          cum[t] = acc += std::log(1.0 / (1.0 + std::exp(-a)));
        }
        const int64_t off = (b * dims.heads + h) * dims.length * dims.head_dim;
        auto ref = brute_softmax_attention(&c.q[off], &c.k[off], &c.v[off], cum.data(), g, dims.length, dims.head_dim);
        CHECK(test::max_abs_diff(ref.data(), &o[off], ref.size()) < 1e-12);
      }
  }
}

TEST_CASE("fox gates start near 1", "[encodings]") {
  EncodingCase c("fox", json::object(), {1, 4, 2, 4, 8}, 6);
  const double* bias = c.params.value(c.params.find("layer.fox_gate_bias"));
  for (int h = 0; h < 2; ++h) CHECK(1.0 / (1.0 + std::exp(-bias[h])) > 0.99);
  CHECK_FALSE(c.params.entry(c.params.find("layer.fox_gate_bias")).weight_decay);
}

TEST_CASE("softmax attention with every log gate 0 equals plain softmax attention", "[encodings]") {
  const int64_t bh = 3, len = 13, d = 6;
  auto q = random_normal(bh * len * d, 7, "q"), k = random_normal(bh * len * d, 7, "k"),
       v = random_normal(bh * len * d, 7, "v");
  std::vector<double> log_gate(bh * len, 0.0), cum(bh * len);
  cumulative_sum(log_gate.data(), cum.data(), bh, len);
  SoftmaxAttentionArgs<double> a{bh, len, d, 1.0 / std::sqrt(double(d)), q.data(), k.data(), v.data()};
  std::vector<double> o_plain(q.size()), o_gated(q.size()), lse(bh * len);
  softmax_attention_forward(a, o_plain.data(), lse.data());
  a.cum_log_gate = cum.data();
  softmax_attention_forward(a, o_gated.data(), lse.data());
  CHECK(test::max_abs_diff(o_plain, o_gated) == 0.0);
  for (int64_t s = 0; s < bh; ++s) {
    auto ref = brute_softmax_attention(&q[s * len * d], &k[s * len * d], &v[s * len * d], nullptr, 1.0, len, d);
    CHECK(test::max_abs_diff(ref.data(), &o_plain[s * len * d], ref.size()) < 1e-12);
  }
}

TEST_CASE("gate ops: cumulative sum and its backward against finite differences", "[encodings]") {
  test::SingleThread single;
  const int64_t slices = 3, len = 9;
  auto g = random_normal(slices * len, 8, "g"), d_cum = random_normal(slices * len, 8, "dc");
  std::vector<double> cum(g.size()), dg(g.size());
  auto loss = [&] {
    cumulative_sum(g.data(), cum.data(), slices, len);
    return test::dot(cum, d_cum);
  };
  cumulative_sum_backward(d_cum.data(), dg.data(), slices, len);
  check_gradient(g, dg, loss, "d_log_gate");
}

// Stick-breaking weights straight from the product formula, one slice.
std::vector<double> brute_stick_breaking_weights(const double* q, const double* k, int64_t len, int64_t d) {
  std::vector<double> a(len * len, 0.0);
  const double s = 1.0 / std::sqrt(double(d));
  auto beta = [&](int64_t i, int64_t j) {
    double z = 0;
    for (int64_t e = 0; e < d; ++e) z += q[i * d + e] * k[j * d + e];
    return 1.0 / (1.0 + std::exp(-s * z));
  };
  for (int64_t i = 0; i < len; ++i)
    for (int64_t j = 0; j <= i; ++j) {
      double w = beta(i, j);
      for (int64_t l = j + 1; l <= i; ++l) w *= 1.0 - beta(i, l);
      a[i * len + j] = w;
    }
  return a;
}

TEST_CASE("stick-breaking attention matches brute force, weights in [0, 1], rows sum to at most 1", "[encodings]") {
  for (int64_t len : {1, 7, 70}) {
    for (bool remainder : {false, true}) {
      const int64_t bh = 2, d = 5;
      auto q = random_normal(bh * len * d, 9, "q", 2.0), k = random_normal(bh * len * d, 9, "k", 2.0),
           v = random_normal(bh * len * d, 9, "v");
      StickBreakingArgs<double> a{bh, len, d, 1.0 / std::sqrt(double(d)), q.data(), k.data(), v.data(), remainder};
      std::vector<double> o(q.size()), weights(len * len);
      stick_breaking_forward(a, o.data());
      for (int64_t s = 0; s < bh; ++s) {
        const double *qs = &q[s * len * d], *ks = &k[s * len * d], *vs = &v[s * len * d];
        auto ref = brute_stick_breaking_weights(qs, ks, len, d);
        stick_breaking_weights(a, s, weights.data());
        CHECK(test::max_abs_diff(ref, weights) < 1e-13);
        for (int64_t i = 0; i < len; ++i) {
          double row = 0;
          for (int64_t j = 0; j < len; ++j) {
            CHECK(weights[i * len + j] >= 0.0);
            CHECK(weights[i * len + j] <= 1.0);
            if (j > i) CHECK(weights[i * len + j] == 0.0);
            row += weights[i * len + j];
          }
          CHECK(row <= 1.0 + 1e-15);
          for (int64_t e = 0; e < d; ++e) {
            double expect = remainder ? (1.0 - row) * vs[i * d + e] : 0.0;
            for (int64_t j = 0; j <= i; ++j) expect += ref[i * len + j] * vs[j * d + e];
            CHECK(std::abs(o[(s * len + i) * d + e] - expect) < 1e-12);
          }
        }
      }
    }
  }
}

TEST_CASE("stick-breaking weights stay finite and bounded for large logits in float32", "[encodings]") {
  const int64_t len = 40, d = 4;
  std::vector<float> q(len * d), k(len * d), v(len * d, 1.0f), o(len * d), w(len * len);
  CounterRng rng(10, "big");
  for (auto* t : {&q, &k})
    for (auto& x : *t) x = float(30.0 * rng.normal());
  StickBreakingArgs<float> a{1, len, d, 0.5f, q.data(), k.data(), v.data()};
  stick_breaking_weights(a, 0, w.data());
  stick_breaking_forward(a, o.data());
  for (float x : w) CHECK((std::isfinite(x) && x >= 0.0f && x <= 1.0f));
  for (float x : o) CHECK(std::isfinite(x));
}

}  // namespace
}  // namespace pathbench
