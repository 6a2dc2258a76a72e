// The PaTH attention kernels: the blocked UT form and the per-query recurrences against float64
// brute force with explicit D×D products, every input gradient against central finite differences,
// blocked against per-query on larger inputs, and the identities (β = 0 is softmax attention).
#include <catch2/catch.hpp>

#include <cmath>

#include "core/attention/fox/fox.h"
#include "core/attention/path/path.h"
#include "core/attention/softmax/softmax_attention.h"
#include "encoding_test_support.h"

namespace pathbench {
namespace {

using test::check_gradient;
using test::max_abs_diff;
using test::random_normal;

// Random PaTH inputs for `bh` slices of length `len` and head dimension `d`.
struct PathInputs {
  int64_t bh, len, d;
  std::vector<double> q, k, v, w, beta, cum;

  PathInputs(int64_t bh_, int64_t len_, int64_t d_, uint64_t seed, bool gate)
      : bh(bh_), len(len_), d(d_),
        q(random_normal(bh * len * d, seed, "q")), k(random_normal(bh * len * d, seed, "k")),
        v(random_normal(bh * len * d, seed, "v")), w(test::random_unit_rows(bh * len, d, seed, "w")),
        beta(test::random_uniform(bh * len, 0.05, 1.95, seed, "beta")) {
    if (gate) {
      cum = test::random_uniform(bh * len, -0.6, 0.0, seed, "log_gate");
      cumulative_sum(cum.data(), cum.data(), bh, len);
    }
  }

  PathAttentionArgs<double> args() const {
    PathAttentionArgs<double> a;
    a.batch_heads = bh;
    a.length = len;
    a.head_dim = d;
    a.scale = 1.0 / std::sqrt(double(d));
    a.q = q.data();
    a.k = k.data();
    a.v = v.data();
    a.w = w.data();
    a.beta = beta.data();
    a.cum_log_gate = cum.empty() ? nullptr : cum.data();
    a.gate_scale = 0.7;
    return a;
  }
};

// docs/design.md §3 "Brute force": for each i, M = I; for j = i, i−1, …: ℓ_ij = q_iᵀ M k_j; M ← M H_j.
std::vector<double> brute_path_attention(const PathAttentionArgs<double>& a) {
  const int64_t len = a.length, d = a.head_dim;
  std::vector<double> o(a.batch_heads * len * d, 0.0);
  for (int64_t sl = 0; sl < a.batch_heads; ++sl) {
    const double *q = a.q + sl * len * d, *k = a.k + sl * len * d, *v = a.v + sl * len * d,
                 *w = a.w + sl * len * d, *beta = a.beta + sl * len;
    for (int64_t i = 0; i < len; ++i) {
      std::vector<double> m(d * d, 0.0), logit(i + 1);
      for (int64_t e = 0; e < d; ++e) m[e * d + e] = 1.0;
      for (int64_t j = i; j >= 0; --j) {
        double l = 0;
        for (int64_t e = 0; e < d; ++e)
          for (int64_t f = 0; f < d; ++f) l += q[i * d + e] * m[e * d + f] * k[j * d + f];
        logit[j] = a.scale * l;
        if (a.cum_log_gate) logit[j] += a.gate_scale * (a.cum_log_gate[sl * len + i] - a.cum_log_gate[sl * len + j]);
        std::vector<double> h(d * d), next(d * d, 0.0);  // H_j = I − β_j w_j w_jᵀ; M ← M·H_j
        for (int64_t e = 0; e < d; ++e)
          for (int64_t f = 0; f < d; ++f) h[e * d + f] = (e == f) - beta[j] * w[j * d + e] * w[j * d + f];
        for (int64_t e = 0; e < d; ++e)
          for (int64_t f = 0; f < d; ++f)
            for (int64_t g = 0; g < d; ++g) next[e * d + f] += m[e * d + g] * h[g * d + f];
        m = next;
      }
      double mx = -1e300, sum = 0;
      for (double l : logit) mx = std::max(mx, l);
      for (double& l : logit) sum += l = std::exp(l - mx);
      for (int64_t j = 0; j <= i; ++j)
        for (int64_t e = 0; e < d; ++e) o[(sl * len + i) * d + e] += logit[j] / sum * v[j * d + e];
    }
  }
  return o;
}

using Forward = std::function<void(const PathAttentionArgs<double>&, double*, double*)>;
using Backward = std::function<void(const PathAttentionArgs<double>&, const double*, const double*, const double*,
                                    double*, double*, double*, double*, double*, double*)>;

struct Implementation {
  std::string name;
  Forward forward;
  Backward backward;
};

std::vector<Implementation> implementations() {
  std::vector<Implementation> out = {
      {"per_query", path_attention_forward_per_query<double>, path_attention_backward_per_query<double>},
      {"blocked", path_attention_forward<double>, path_attention_backward<double>}};
  for (int64_t chunk : {1, 3, 4}) {
    out.push_back({"blocked chunk " + std::to_string(chunk),
                   [chunk](const PathAttentionArgs<double>& a, double* o, double* lse) {
                     path_attention_forward_chunked(a, chunk, o, lse);
                   },
                   [chunk](const PathAttentionArgs<double>& a, const double* o, const double* lse, const double* d_o,
                           double* dq, double* dk, double* dv, double* dw, double* db, double* dc) {
                     path_attention_backward_chunked(a, chunk, o, lse, d_o, dq, dk, dv, dw, db, dc);
                   }});
  }
  return out;
}

TEST_CASE("PaTH forward matches brute force with explicit D×D products", "[encodings]") {
  test::SingleThread single;
  struct Shape {
    int64_t len, d;
  };
  for (const auto& impl : implementations())
    for (Shape sh : {Shape{1, 4}, Shape{5, 1}, Shape{11, 3}, Shape{13, 16}, Shape{70, 4}, Shape{40, 32}})
      for (bool gate : {false, true}) {
        INFO(impl.name << " T=" << sh.len << " D=" << sh.d << " gate=" << gate);
        PathInputs in(2, sh.len, sh.d, 11, gate);
        auto a = in.args();
        std::vector<double> o(in.q.size()), lse(in.bh * in.len);
        impl.forward(a, o.data(), lse.data());
        CHECK(max_abs_diff(o, brute_path_attention(a)) < 1e-12);
      }
}

TEST_CASE("PaTH supports head dimensions 64 and 128 (blocked against per-query)", "[encodings]") {
  for (int64_t d : {64, 128}) {
    PathInputs in(1, 37, d, 12, false);
    auto a = in.args();
    std::vector<double> o1(in.q.size()), o2(in.q.size()), lse(in.len);
    path_attention_forward(a, o1.data(), lse.data());
    path_attention_forward_per_query(a, o2.data(), lse.data());
    CHECK(max_abs_diff(o1, o2) < 1e-12);
  }
}

TEST_CASE("PaTH gradients match finite differences (q, k, v, w, beta, gates)", "[encodings]") {
  test::SingleThread single;
  struct Shape {
    int64_t len, d;
  };
  for (const auto& impl : implementations())
    for (Shape sh : {Shape{1, 3}, Shape{7, 2}, Shape{10, 3}, Shape{70, 2}})
      for (bool gate : {false, true}) {
        if (sh.len == 70 && impl.name.find("chunk") != std::string::npos) continue;  // small chunks: short T
        INFO(impl.name << " T=" << sh.len << " D=" << sh.d << " gate=" << gate);
        PathInputs in(2, sh.len, sh.d, 13, gate);
        const std::vector<double> d_o = random_normal(in.q.size(), 13, "do");
        auto loss = [&] {
          std::vector<double> o(in.q.size()), lse(in.bh * in.len);
          impl.forward(in.args(), o.data(), lse.data());
          return test::dot(o, d_o);
        };
        std::vector<double> o(in.q.size()), lse(in.bh * in.len);
        impl.forward(in.args(), o.data(), lse.data());
        std::vector<double> dq(o.size()), dk(o.size()), dv(o.size()), dw(o.size()), db(lse.size()), dc(lse.size());
        impl.backward(in.args(), o.data(), lse.data(), d_o.data(), dq.data(), dk.data(), dv.data(), dw.data(),
                      db.data(), gate ? dc.data() : nullptr);
        check_gradient(in.q, dq, loss, "dq");
        check_gradient(in.k, dk, loss, "dk");
        check_gradient(in.v, dv, loss, "dv");
        check_gradient(in.w, dw, loss, "dw");
        check_gradient(in.beta, db, loss, "dbeta");
        if (gate) check_gradient(in.cum, dc, loss, "d_cum_log_gate");
      }
}

TEST_CASE("blocked PaTH equals per-query PaTH, forward and backward", "[encodings]") {
  for (int64_t len : {64, 130})
    for (bool gate : {false, true}) {
      INFO("T=" << len << " gate=" << gate);
      PathInputs in(3, len, 32, 14, gate);
      auto a = in.args();
      const size_t n = in.q.size(), nt = in.bh * in.len;
      const std::vector<double> d_o = random_normal(n, 14, "do");
      std::vector<std::vector<double>> results[2];
      for (int impl = 0; impl < 2; ++impl) {
        std::vector<double> o(n), lse(nt), dq(n), dk(n), dv(n), dw(n), db(nt), dc(nt);
        if (impl == 0) {
          path_attention_forward(a, o.data(), lse.data());
          path_attention_backward(a, o.data(), lse.data(), d_o.data(), dq.data(), dk.data(), dv.data(), dw.data(),
                                  db.data(), dc.data());
        } else {
          path_attention_forward_per_query(a, o.data(), lse.data());
          path_attention_backward_per_query(a, o.data(), lse.data(), d_o.data(), dq.data(), dk.data(), dv.data(),
                                            dw.data(), db.data(), dc.data());
        }
        results[impl] = {o, lse, dq, dk, dv, dw, db};
        if (gate) results[impl].push_back(dc);
      }
      for (size_t t = 0; t < results[0].size(); ++t) {
        INFO("output " << t);
        CHECK(max_abs_diff(results[0][t], results[1][t]) < 1e-10);
      }
    }
}

TEST_CASE("PaTH with beta = 0 equals plain softmax attention", "[encodings]") {
  PathInputs in(2, 45, 8, 15, false);
  std::fill(in.beta.begin(), in.beta.end(), 0.0);
  auto a = in.args();
  SoftmaxAttentionArgs<double> sa{in.bh, in.len, in.d, a.scale, in.q.data(), in.k.data(), in.v.data()};
  std::vector<double> o_path(in.q.size()), o_soft(in.q.size()), lse(in.bh * in.len);
  softmax_attention_forward(sa, o_soft.data(), lse.data());
  path_attention_forward(a, o_path.data(), lse.data());
  CHECK(max_abs_diff(o_path, o_soft) < 1e-13);
  path_attention_forward_per_query(a, o_path.data(), lse.data());
  CHECK(max_abs_diff(o_path, o_soft) < 1e-13);
}

TEST_CASE("PaTH in float32 stays close to float64 with beta near 2", "[encodings]") {
  PathInputs in(2, 200, 32, 16, true);
  for (auto& b : in.beta) b = 1.99;
  auto a = in.args();
  std::vector<double> o64(in.q.size()), lse64(in.bh * in.len);
  path_attention_forward(a, o64.data(), lse64.data());
  auto to_float = [](const std::vector<double>& x) { return std::vector<float>(x.begin(), x.end()); };
  auto q = to_float(in.q), k = to_float(in.k), v = to_float(in.v), w = to_float(in.w), beta = to_float(in.beta),
       cum = to_float(in.cum);
  PathAttentionArgs<float> af{in.bh, in.len, in.d, float(a.scale), q.data(), k.data(), v.data(),
                              w.data(), beta.data(), cum.data(), float(a.gate_scale)};
  std::vector<float> o32(q.size()), lse32(in.bh * in.len);
  path_attention_forward(af, o32.data(), lse32.data());
  double err = 0;
  for (size_t i = 0; i < o32.size(); ++i) err = std::max(err, std::abs(double(o32[i]) - o64[i]));
  CHECK(err < 1e-4);
}

}  // namespace
}  // namespace pathbench
