// Float64 brute-force stick-breaking and PaTH attention (see attention_reference.h).
#include "tests/attention_reference.h"

#include <algorithm>
#include <cmath>

namespace pathbench::reference {

namespace {

double dot(const double* a, const double* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}
double softplus(double z) { return std::max(z, 0.0) + std::log1p(std::exp(-std::abs(z))); }
double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

// u ← u − β (w·u) w
void reflect(double* u, const double* w, double beta, int64_t d) {
  const double c = beta * dot(w, u, d);
  for (int64_t x = 0; x < d; ++x) u[x] -= c * w[x];
}

}  // namespace

void stick_breaking_forward(const AttentionShape& s, double scale, bool remainder_to_current, const double* q,
                            const double* k, const double* v, double* o) {
  const int64_t T = s.length, D = s.head_dim;
  for (int64_t h = 0; h < s.batch_heads; ++h) {
    const int64_t off = h * T * D;
    for (int64_t i = 0; i < T; ++i) {
      double* oi = o + off + i * D;
      std::fill(oi, oi + D, 0.0);
      double carry = 0, mass = 0;
      for (int64_t j = i; j >= 0; --j) {
        const double z = scale * dot(q + off + i * D, k + off + j * D, D);
        const double a = std::exp(z - softplus(z) - carry);
        carry += softplus(z);
        mass += a;
        for (int64_t x = 0; x < D; ++x) oi[x] += a * v[off + j * D + x];
      }
      if (remainder_to_current)
        for (int64_t x = 0; x < D; ++x) oi[x] += (1 - mass) * v[off + i * D + x];
    }
  }
}

void stick_breaking_backward(const AttentionShape& s, double scale, bool remainder_to_current, const double* q,
                             const double* k, const double* v, const double* d_o, double* dq, double* dk, double* dv) {
  const int64_t T = s.length, D = s.head_dim, n = s.batch_heads * T * D;
  std::vector<double> o(n);
  stick_breaking_forward(s, scale, remainder_to_current, q, k, v, o.data());
  std::fill(dq, dq + n, 0.0);
  std::fill(dk, dk + n, 0.0);
  std::fill(dv, dv + n, 0.0);
  const double rem = remainder_to_current ? 1.0 : 0.0;
  for (int64_t h = 0; h < s.batch_heads; ++h) {
    const int64_t off = h * T * D;
    for (int64_t i = 0; i < T; ++i) {
      const double* gi = d_o + off + i * D;
      const double dov = dot(gi, v + off + i * D, D);
      const double total = dot(gi, o.data() + off + i * D, D) - rem * dov;  // Σ_j g_ij
      double carry = 0, g_suffix = 0, mass = 0;
      for (int64_t j = i; j >= 0; --j) {
        const double z = scale * dot(q + off + i * D, k + off + j * D, D);
        const double a = std::exp(z - softplus(z) - carry);
        carry += softplus(z);
        mass += a;
        const double g = a * (dot(gi, v + off + j * D, D) - rem * dov);
        g_suffix += g;
        const double dz = g * (1 - sigmoid(z)) - sigmoid(z) * (total - g_suffix);
        for (int64_t x = 0; x < D; ++x) {
          dq[off + i * D + x] += scale * dz * k[off + j * D + x];
          dk[off + j * D + x] += scale * dz * q[off + i * D + x];
          dv[off + j * D + x] += a * gi[x];
        }
      }
      for (int64_t x = 0; x < D; ++x) dv[off + i * D + x] += rem * (1 - mass) * gi[x];
    }
  }
}

namespace {

// Logits of row i (keys 0..i) and the moved queries U_j = H_{j+1} ⋯ H_i q_i (row-major [i+1, D]).
void path_row(const AttentionShape& s, const PathInputs& in, int64_t h, int64_t i, std::vector<double>& logits,
              std::vector<double>& moved) {
  const int64_t T = s.length, D = s.head_dim, off = h * T * D;
  logits.assign(i + 1, 0.0);
  moved.assign((i + 1) * D, 0.0);
  std::vector<double> u(in.q + off + i * D, in.q + off + (i + 1) * D);
  for (int64_t j = i; j >= 0; --j) {
    std::copy(u.begin(), u.end(), moved.begin() + j * D);
    logits[j] = in.scale * dot(u.data(), in.k + off + j * D, D);
    if (in.gate) logits[j] += in.gate_scale * (in.gate[h * T + i] - in.gate[h * T + j]);
    reflect(u.data(), in.w + off + j * D, in.beta[h * T + j], D);
  }
}

}  // namespace

void path_forward(const AttentionShape& s, const PathInputs& in, double* o, double* lse) {
  const int64_t T = s.length, D = s.head_dim;
  std::vector<double> logits, moved;
  for (int64_t h = 0; h < s.batch_heads; ++h)
    for (int64_t i = 0; i < T; ++i) {
      path_row(s, in, h, i, logits, moved);
      const double mx = *std::max_element(logits.begin(), logits.end());
      double sum = 0;
      for (double l : logits) sum += std::exp(l - mx);
      lse[h * T + i] = mx + std::log(sum);
      double* oi = o + (h * T + i) * D;
      std::fill(oi, oi + D, 0.0);
      for (int64_t j = 0; j <= i; ++j)
        for (int64_t x = 0; x < D; ++x) oi[x] += std::exp(logits[j] - lse[h * T + i]) * in.v[(h * T + j) * D + x];
    }
}

void path_backward(const AttentionShape& s, const PathInputs& in, const double* o, const double* lse,
                   const double* d_o, double* dq, double* dk, double* dv, double* dw, double* dbeta, double* dgate) {
  const int64_t T = s.length, D = s.head_dim, n = s.batch_heads * T * D;
  for (double* p : {dq, dk, dv, dw}) std::fill(p, p + n, 0.0);
  std::fill(dbeta, dbeta + s.batch_heads * T, 0.0);
  if (dgate) std::fill(dgate, dgate + s.batch_heads * T, 0.0);
  std::vector<double> logits, moved, dl, r(D);
  for (int64_t h = 0; h < s.batch_heads; ++h) {
    const int64_t off = h * T * D;
    for (int64_t i = 0; i < T; ++i) {
      path_row(s, in, h, i, logits, moved);
      const double* gi = d_o + off + i * D;
      const double delta = dot(gi, o + off + i * D, D);
      dl.assign(i + 1, 0.0);
      for (int64_t j = 0; j <= i; ++j) {
        const double p = std::exp(logits[j] - lse[h * T + i]);
        for (int64_t x = 0; x < D; ++x) dv[off + j * D + x] += p * gi[x];
        dl[j] = p * (dot(gi, in.v + off + j * D, D) - delta);
        if (dgate) dgate[h * T + i] += in.gate_scale * dl[j], dgate[h * T + j] -= in.gate_scale * dl[j];
      }
      std::fill(r.begin(), r.end(), 0.0);
      for (int64_t m = 0; m <= i; ++m) {
        const double* um = moved.data() + m * D;
        const double* wm = in.w + off + m * D;
        if (m > 0) {
          const double bm = in.beta[h * T + m], a = dot(wm, um, D), c = dot(wm, r.data(), D);
          dbeta[h * T + m] -= a * c;
          for (int64_t x = 0; x < D; ++x) dw[off + m * D + x] -= bm * (c * um[x] + a * r[x]);
          for (int64_t x = 0; x < D; ++x) r[x] -= bm * c * wm[x];
        }
        for (int64_t x = 0; x < D; ++x) {
          dk[off + m * D + x] += in.scale * dl[m] * um[x];
          r[x] += in.scale * dl[m] * in.k[off + m * D + x];
        }
      }
      for (int64_t x = 0; x < D; ++x) dq[off + i * D + x] = r[x];
    }
  }
}

}  // namespace pathbench::reference
