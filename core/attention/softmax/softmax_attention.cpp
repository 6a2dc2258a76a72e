// Causal softmax attention, CPU: blocks of query rows against the keys they can see, Eigen matrix
// products inside each (batch, head) slice, slices in parallel.
#include "core/attention/softmax/softmax_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/attention/attention_rows.h"
#include "core/attention/backward_slice.h"
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
  if (a.cum_log_gate) add_gate_bias(s, a.cum_log_gate + slice * len, r0, a.gate_scale);
  mask_future(s, r0);
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
        softmax_rows(s, lse + slice * len + r0);
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
      auto [q, k, v, dout, dq_m, dk_m, dv_m] = backward_slice(a, d_o, dq, dk, dv, slice);
      auto out = as_matrix(o + slice * len * d, len, d);
      T* dc = d_cum_log_gate ? d_cum_log_gate + slice * len : nullptr;
      if (dc) std::fill(dc, dc + len, T(0));
      for (int64_t r0 = 0; r0 < len; r0 += kRowBlock) {
        const int64_t r1 = std::min(len, r0 + kRowBlock), rows = r1 - r0;
        block_logits(a, slice, r0, r1, p);
        probabilities_from_lse(p, lse + slice * len + r0);
        softmax_rows_backward(p, dout.middleRows(r0, rows), out.middleRows(r0, rows), v.topRows(r1),
                              dv_m.topRows(r1), dp, delta);
        if (dc) gate_bias_backward(p, dc, r0, a.gate_scale);
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
