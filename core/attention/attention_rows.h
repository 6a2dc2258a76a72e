// Row-block helpers shared by the CPU softmax-type attention kernels (softmax_attention, path):
// a block holds the logits of query rows r0..r0+rows−1 of one (batch, head) slice against keys
// 0..cols−1. Causal masking, the FoX log-gate bias, the row softmax (with its log-sum-exp), and the
// softmax backward that turns probabilities into logit gradients. CPU only (Eigen).
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/linalg.h"

namespace pathbench {

// Sets entries of keys after their query (j > r0 + i) to −inf.
template <typename T>
void mask_future(Matrix<T>& s, int64_t r0) {
  for (int64_t i = 0; i < s.rows(); ++i)
    for (int64_t j = r0 + i + 1; j < s.cols(); ++j) s(i, j) = -std::numeric_limits<T>::infinity();
}

// Adds g·(c_i − c_j) on the causal entries; c: [T] cumulative log gates of the slice.
template <typename T>
void add_gate_bias(Matrix<T>& s, const T* c, int64_t r0, T gate_scale) {
  for (int64_t i = 0; i < s.rows(); ++i) {
    const int64_t qi = r0 + i;
    for (int64_t j = 0; j <= qi && j < s.cols(); ++j) s(i, j) += gate_scale * (c[qi] - c[j]);
  }
}

// dc[qi] += g·Σ_j ds_ij and dc[j] −= g·ds_ij: the backward of add_gate_bias (ds is 0 off the mask).
template <typename T>
void gate_bias_backward(const Matrix<T>& ds, T* dc, int64_t r0, T gate_scale) {
  for (int64_t i = 0; i < ds.rows(); ++i) {
    dc[r0 + i] += gate_scale * ds.row(i).sum();
    for (int64_t j = 0; j < ds.cols(); ++j) dc[j] -= gate_scale * ds(i, j);
  }
}

// Weights below min_normal/ε (≈ 1e-31 in float, 1e-292 in double; the largest weight is 1) become
// exactly 0. Subnormal operands, and the subnormal products that tiny weights make, slow the
// matrix products that follow several times over; no sum can notice weights this small.
template <typename T>
void flush_negligible(Matrix<T>& p) {
  const T tiny = std::numeric_limits<T>::min() / std::numeric_limits<T>::epsilon();
  T* data = p.data();
  for (Eigen::Index n = 0; n < p.size(); ++n) data[n] = data[n] < tiny ? T(0) : data[n];
}

// Logits → probabilities in place; lse[i] = log Σ_j exp(s_ij).
template <typename T>
void softmax_rows(Matrix<T>& s, T* lse) {
  for (int64_t i = 0; i < s.rows(); ++i) {
    auto row = s.row(i);
    const T mx = row.maxCoeff();
    row = (row.array() - mx).exp();
    const T sum = row.sum();
    row /= sum;
    lse[i] = mx + std::log(sum);
  }
  flush_negligible(s);
}

// Logits → probabilities in place from the saved log-sum-exp.
template <typename T>
void probabilities_from_lse(Matrix<T>& s, const T* lse) {
  for (int64_t i = 0; i < s.rows(); ++i) s.row(i) = (s.row(i).array() - lse[i]).exp();
  flush_negligible(s);
}

// Softmax backward for one block: p holds the probabilities [rows, cols]; dout/out are the block's
// rows of dO and O [rows, D]; v and dv are the first cols rows of V and dV [cols, D].
// Adds Pᵀ·dO into dv and turns p into the logit gradient dS = P ∘ (dO·Vᵀ − δ), δ_i = dO_i·O_i.
// dp and delta are scratch.
template <typename T, typename DOut, typename Out, typename V, typename DV>
void softmax_rows_backward(Matrix<T>& p, const DOut& dout, const Out& out, const V& v, DV&& dv, Matrix<T>& dp,
                           Vector<T>& delta) {
  dp.noalias() = dout * v.transpose();
  delta = (dout.array() * out.array()).rowwise().sum();
  dv.noalias() += p.transpose() * dout;
  p.array() *= (dp.array().colwise() - delta.array());
}

}  // namespace pathbench
