// PaTH attention, CPU, per-query recurrences (docs/design.md §3), the readable reference of the blocked
// form: for query i the state u runs from q_i back through the keys, u ← H_j u, giving one logit
// per step; the backward runs the r/u recurrence forward over the keys. Matrix-vector work only.
#include <algorithm>
#include <cmath>

#include "core/attention/attention_rows.h"
#include "core/attention/path/path.h"
#include "core/linalg.h"

namespace pathbench {

namespace {

constexpr int64_t kRowBlock = 64;

// u: [i+1, D], row j = U_j = H_{j+1} ⋯ H_i q_i, the query's state when it meets key j.
template <typename T>
void query_states(const PathAttentionArgs<T>& a, int64_t slice, int64_t i, Matrix<T>& u) {
  const int64_t d = a.head_dim, off = slice * a.length * d;
  auto q = as_matrix(a.q + off, a.length, d);
  auto w = as_matrix(a.w + off, a.length, d);
  const T* beta = a.beta + slice * a.length;
  u.resize(i + 1, d);
  u.row(i) = q.row(i);
  for (int64_t j = i; j > 0; --j) u.row(j - 1) = u.row(j) - (beta[j] * w.row(j).dot(u.row(j))) * w.row(j);
}

// Rows r0 … r1−1 of the logits (scaled, gated, masked), [rows, r1].
template <typename T>
void block_logits(const PathAttentionArgs<T>& a, int64_t slice, int64_t r0, int64_t r1, Matrix<T>& s,
                  Matrix<T>& u) {
  const int64_t d = a.head_dim;
  auto k = as_matrix(a.k + slice * a.length * d, a.length, d);
  s.setZero(r1 - r0, r1);
  for (int64_t i = r0; i < r1; ++i) {
    query_states(a, slice, i, u);
    s.row(i - r0).head(i + 1) = a.scale * (u.array() * k.topRows(i + 1).array()).rowwise().sum().transpose();
  }
  if (a.cum_log_gate) add_gate_bias(s, a.cum_log_gate + slice * a.length, r0, a.gate_scale);
  mask_future(s, r0);
}

}  // namespace

template <typename T>
void path_attention_forward_per_query(const PathAttentionArgs<T>& a, T* o, T* lse) {
  const int64_t len = a.length, d = a.head_dim;
#pragma omp parallel
  {
    Matrix<T> s, u;
#pragma omp for schedule(static)
    for (int64_t slice = 0; slice < a.batch_heads; ++slice) {
      auto v = as_matrix(a.v + slice * len * d, len, d);
      auto out = as_matrix(o + slice * len * d, len, d);
      for (int64_t r0 = 0; r0 < len; r0 += kRowBlock) {
        const int64_t r1 = std::min(len, r0 + kRowBlock);
        block_logits(a, slice, r0, r1, s, u);
        softmax_rows(s, lse + slice * len + r0);
        out.middleRows(r0, r1 - r0).noalias() = s * v.topRows(r1);
      }
    }
  }
}

template <typename T>
void path_attention_backward_per_query(const PathAttentionArgs<T>& a, const T* o, const T* lse, const T* d_o, T* dq,
                                       T* dk, T* dv, T* dw, T* dbeta, T* d_cum_log_gate) {
  const int64_t len = a.length, d = a.head_dim;
#pragma omp parallel
  {
    Matrix<T> p, dp, u;
    Vector<T> delta, r;
#pragma omp for schedule(static)
    for (int64_t slice = 0; slice < a.batch_heads; ++slice) {
      const int64_t off = slice * len * d;
      auto k = as_matrix(a.k + off, len, d);
      auto v = as_matrix(a.v + off, len, d);
      auto w = as_matrix(a.w + off, len, d);
      const T* beta = a.beta + slice * len;
      auto out = as_matrix(o + off, len, d);
      auto dout = as_matrix(d_o + off, len, d);
      auto dq_m = as_matrix(dq + off, len, d);
      auto dk_m = as_matrix(dk + off, len, d);
      auto dv_m = as_matrix(dv + off, len, d);
      auto dw_m = as_matrix(dw + off, len, d);
      T* db = dbeta + slice * len;
      dk_m.setZero();
      dv_m.setZero();
      dw_m.setZero();
      std::fill(db, db + len, T(0));
      T* dc = a.cum_log_gate && d_cum_log_gate ? d_cum_log_gate + slice * len : nullptr;
      if (dc) std::fill(dc, dc + len, T(0));
      for (int64_t r0 = 0; r0 < len; r0 += kRowBlock) {
        const int64_t r1 = std::min(len, r0 + kRowBlock), rows = r1 - r0;
        block_logits(a, slice, r0, r1, p, u);
        probabilities_from_lse(p, lse + slice * len + r0);
        softmax_rows_backward(p, dout.middleRows(r0, rows), out.middleRows(r0, rows), v.topRows(r1),
                              dv_m.topRows(r1), dp, delta);
        if (dc) gate_bias_backward(p, dc, r0, a.gate_scale);
        for (int64_t i = r0; i < r1; ++i) {
          // r = Σ_{j<m} dℓ_ij · H_{m−1} ⋯ H_{j+1} k_j before step m; at the end dq_i = r.
          query_states(a, slice, i, u);
          r.setZero(d);
          for (int64_t m = 0; m <= i; ++m) {
            if (m > 0) {
              const T am = w.row(m).dot(u.row(m)), cm = w.row(m).dot(r);
              db[m] -= am * cm;
              dw_m.row(m) -= beta[m] * (cm * u.row(m) + am * r.transpose());
              r -= (beta[m] * cm) * w.row(m).transpose();
            }
            const T dl = a.scale * p(i - r0, m);
            dk_m.row(m) += dl * u.row(m);
            r += dl * k.row(m).transpose();
          }
          dq_m.row(i) = r.transpose();
        }
      }
    }
  }
}

template void path_attention_forward_per_query<float>(const PathAttentionArgs<float>&, float*, float*);
template void path_attention_forward_per_query<double>(const PathAttentionArgs<double>&, double*, double*);
template void path_attention_backward_per_query<float>(const PathAttentionArgs<float>&, const float*, const float*,
                                                       const float*, float*, float*, float*, float*, float*, float*);
template void path_attention_backward_per_query<double>(const PathAttentionArgs<double>&, const double*,
                                                        const double*, const double*, double*, double*, double*,
                                                        double*, double*, double*);

}  // namespace pathbench
