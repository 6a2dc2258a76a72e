// Causal softmax attention, CPU: blocks of query rows against the keys they can see, Eigen matrix
// products inside each (batch, head) slice, slices in parallel.
#include "core/attention/softmax_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/linalg.h"

namespace pathbench {

namespace {

constexpr int64_t kRowBlock = 64;

// Fills s (rows r0..r1−1 of the logits, columns 0..r1−1) for one slice; masked entries are −inf.
template <typename T>
void block_logits(const SoftmaxAttentionArgs<T>& a, int64_t slice, int64_t r0, int64_t r1, Matrix<T>& s) {
  const int64_t len = a.length, d = a.head_dim, rows = r1 - r0;
  auto q = as_matrix(a.q + slice * len * d, len, d);
  auto k = as_matrix(a.k + slice * len * d, len, d);
  s.resize(rows, r1);
  s.noalias() = a.scale * (q.middleRows(r0, rows) * k.topRows(r1).transpose());
  const T* c = a.cum_log_gate ? a.cum_log_gate + slice * len : nullptr;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t qi = r0 + i;
    if (c)
      for (int64_t j = 0; j <= qi; ++j) s(i, j) += a.gate_scale * (c[qi] - c[j]);
    for (int64_t j = qi + 1; j < r1; ++j) s(i, j) = -std::numeric_limits<T>::infinity();
  }
}

}  // namespace

template <typename T>
void softmax_attention_forward(const SoftmaxAttentionArgs<T>& a, T* o, T* lse) {
  const int64_t len = a.length, d = a.head_dim;
#pragma omp parallel
  {
    Matrix<T> s;  // [rows, r1] logits, then probabilities
#pragma omp for schedule(static)
    for (int64_t slice = 0; slice < a.batch_heads; ++slice) {
      auto v = as_matrix(a.v + slice * len * d, len, d);
      auto out = as_matrix(o + slice * len * d, len, d);
      for (int64_t r0 = 0; r0 < len; r0 += kRowBlock) {
        const int64_t r1 = std::min(len, r0 + kRowBlock), rows = r1 - r0;
        block_logits(a, slice, r0, r1, s);
        for (int64_t i = 0; i < rows; ++i) {
          auto row = s.row(i);
          T mx = row.maxCoeff();
          row = (row.array() - mx).exp();
          T sum = row.sum();
          row /= sum;
          lse[slice * len + r0 + i] = mx + std::log(sum);
        }
        out.middleRows(r0, rows).noalias() = s * v.topRows(r1);
      }
    }
  }
}

template <typename T>
void softmax_attention_backward(const SoftmaxAttentionArgs<T>& a, const T* o, const T* lse, const T* d_o, T* dq,
                                T* dk, T* dv, T* d_cum_log_gate) {
  const int64_t len = a.length, d = a.head_dim;
#pragma omp parallel
  {
    Matrix<T> p, dp;  // [rows, r1] probabilities and their gradient
    Vector<T> delta;  // [rows] Σ_d dO·O per row
#pragma omp for schedule(static)
    for (int64_t slice = 0; slice < a.batch_heads; ++slice) {
      const int64_t off = slice * len * d;
      auto q = as_matrix(a.q + off, len, d);
      auto k = as_matrix(a.k + off, len, d);
      auto v = as_matrix(a.v + off, len, d);
      auto out = as_matrix(o + off, len, d);
      auto dout = as_matrix(d_o + off, len, d);
      auto dq_m = as_matrix(dq + off, len, d);
      auto dk_m = as_matrix(dk + off, len, d);
      auto dv_m = as_matrix(dv + off, len, d);
      dk_m.setZero();
      dv_m.setZero();
      T* dc = d_cum_log_gate ? d_cum_log_gate + slice * len : nullptr;
      if (dc) std::fill(dc, dc + len, T(0));
      for (int64_t r0 = 0; r0 < len; r0 += kRowBlock) {
        const int64_t r1 = std::min(len, r0 + kRowBlock), rows = r1 - r0;
        block_logits(a, slice, r0, r1, p);
        for (int64_t i = 0; i < rows; ++i) p.row(i) = (p.row(i).array() - lse[slice * len + r0 + i]).exp();
        dp.noalias() = dout.middleRows(r0, rows) * v.topRows(r1).transpose();
        delta = (dout.middleRows(r0, rows).array() * out.middleRows(r0, rows).array()).rowwise().sum();
        dv_m.topRows(r1).noalias() += p.transpose() * dout.middleRows(r0, rows);
        // dS = P ∘ (dP − δ): the logit gradient, reusing p's storage.
        p.array() *= (dp.array().colwise() - delta.array());
        if (dc) {
          for (int64_t i = 0; i < rows; ++i) {
            T row_sum = p.row(i).sum();
            dc[r0 + i] += a.gate_scale * row_sum;
            for (int64_t j = 0; j < r1; ++j) dc[j] -= a.gate_scale * p(i, j);
          }
        }
        dq_m.middleRows(r0, rows).noalias() = a.scale * (p * k.topRows(r1));
        dk_m.topRows(r1).noalias() += a.scale * (p.transpose() * q.middleRows(r0, rows));
      }
    }
  }
}

template void softmax_attention_forward<float>(const SoftmaxAttentionArgs<float>&, float*, float*);
template void softmax_attention_forward<double>(const SoftmaxAttentionArgs<double>&, double*, double*);
template void softmax_attention_backward<float>(const SoftmaxAttentionArgs<float>&, const float*, const float*,
                                                const float*, float*, float*, float*, float*);
template void softmax_attention_backward<double>(const SoftmaxAttentionArgs<double>&, const double*, const double*,
                                                 const double*, double*, double*, double*, double*);

}  // namespace pathbench
