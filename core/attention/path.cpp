// PaTH attention, CPU, blocked UT form (DESIGN.md §4): per (batch, head) slice, every chunk of C
// tokens gets its UT quantities (X, the chunk product P, queries moved to the chunk start, keys moved
// to the chunk end, the logits inside the chunk); a query chunk's logits against earlier chunks come
// from scanning them backwards with one D×D update per chunk. Backward reruns that scan, sends the
// logit gradients back through it (the cross-chunk scan), then through each chunk's UT formulas.
// Slices in parallel; also the decoding step.
#include "core/attention/path.h"

#include <algorithm>
#include <cmath>

#include "core/attention/attention_rows.h"
#include "core/linalg.h"

namespace pathbench {

namespace {

// The UT-transform quantities of one chunk: rows start … start+L−1 of a slice (s … e below).
template <typename T>
struct Chunk {
  int64_t start = 0, size = 0;
  Matrix<T> gram;   // [L, L] W·Wᵀ
  Matrix<T> bgram;  // [L, L] diag(β)·W·Wᵀ; its strict lower part is A − I
  Matrix<T> x;      // [L, L] X = A⁻¹·diag(β), A = I + strict_lower(diag(β)·W·Wᵀ); lower triangular
  Matrix<T> xw;     // [L, D] X·W
  Matrix<T> m1;     // [L, L] tril(Q·Wᵀ)
  Matrix<T> m2;     // [L, L] strict_lower(W·Kᵀ)
  Matrix<T> xm2;    // [L, L] X·m2
  Matrix<T> q_hat;  // [L, D] queries moved to the chunk start: row r = q_rᵀ H_r ⋯ H_s
  Matrix<T> k_hat;  // [L, D] keys moved to the chunk end: row j = (H_e ⋯ H_{j+1} k_j)ᵀ
  Matrix<T> p;      // [D, D] the chunk's product H_e ⋯ H_s = I − Wᵀ·X·W
  Matrix<T> intra;  // [L, L] unscaled logits inside the chunk, tril(Q·Kᵀ) − tril(m1·X·m2)
};

template <typename T>
struct SliceViews {
  ConstMatrixMap<T> q, k, w;
  ConstVectorMap<T> beta;
};

template <typename T>
SliceViews<T> slice_rows(const PathAttentionArgs<T>& a, int64_t slice, int64_t start, int64_t size) {
  const int64_t off = (slice * a.length + start) * a.head_dim;
  return {as_matrix(a.q + off, size, a.head_dim), as_matrix(a.k + off, size, a.head_dim),
          as_matrix(a.w + off, size, a.head_dim), ConstVectorMap<T>(a.beta + slice * a.length + start, size)};
}

template <typename T>
void prepare_chunk(const PathAttentionArgs<T>& a, int64_t slice, int64_t start, int64_t size, Chunk<T>& c) {
  const int64_t d = a.head_dim;
  const auto [q, k, w, beta] = slice_rows(a, slice, start, size);
  c.start = start;
  c.size = size;
  c.gram.noalias() = w * w.transpose();
  c.bgram.noalias() = beta.asDiagonal() * c.gram;
  c.x.setIdentity(size, size);
  c.bgram.template triangularView<Eigen::UnitLower>().solveInPlace(c.x);
  c.x = c.x * beta.asDiagonal();
  c.xw.noalias() = c.x.template triangularView<Eigen::Lower>() * w;
  c.m1.noalias() = q * w.transpose();
  c.m1.template triangularView<Eigen::StrictlyUpper>().setZero();
  c.m2.noalias() = w * k.transpose();
  c.m2.template triangularView<Eigen::Upper>().setZero();
  c.xm2.noalias() = c.x.template triangularView<Eigen::Lower>() * c.m2;
  c.q_hat = q;
  c.q_hat.noalias() -= c.m1 * c.xw;
  c.k_hat = k;
  c.k_hat.noalias() -= c.xm2.transpose() * w;
  c.p.setIdentity(d, d);
  c.p.noalias() -= w.transpose() * c.xw;
  c.intra.noalias() = q * k.transpose();
  c.intra.noalias() -= c.m1 * c.xm2;
  c.intra.template triangularView<Eigen::StrictlyUpper>().setZero();
}

template <typename T>
void prepare_chunks(const PathAttentionArgs<T>& a, int64_t slice, int64_t chunk, std::vector<Chunk<T>>& chunks) {
  chunks.resize((a.length + chunk - 1) / chunk);
  for (size_t c = 0; c < chunks.size(); ++c) {
    const int64_t start = int64_t(c) * chunk;
    prepare_chunk(a, slice, start, std::min(chunk, a.length - start), chunks[c]);
  }
}

// Logits of query chunk b against keys 0 … e_b−1 (scaled, gated, masked) into s; with `states`,
// keeps the scan's query states U_c = Q̂_b P_{b−1} ⋯ P_{c+1} for c < b.
template <typename T>
void chunk_logits(const PathAttentionArgs<T>& a, int64_t slice, const std::vector<Chunk<T>>& chunks, size_t b,
                  Matrix<T>& s, Matrix<T>& u, Matrix<T>& tmp, std::vector<Matrix<T>>* states) {
  const Chunk<T>& cb = chunks[b];
  s.resize(cb.size, cb.start + cb.size);
  s.middleCols(cb.start, cb.size) = cb.intra;
  u = cb.q_hat;
  for (size_t c = b; c-- > 0;) {
    const Chunk<T>& cc = chunks[c];
    if (states) (*states)[c] = u;
    s.middleCols(cc.start, cc.size).noalias() = u * cc.k_hat.transpose();
    if (c > 0) {
      tmp.noalias() = u * cc.p;
      u.swap(tmp);
    }
  }
  s *= a.scale;
  if (a.cum_log_gate) add_gate_bias(s, a.cum_log_gate + slice * a.length, cb.start, a.gate_scale);
  mask_future(s, cb.start);
}

// Gradients of one chunk's UT quantities → dq, dk, dw (rows of the chunk, overwritten) and dbeta.
template <typename T>
struct ChunkGrads {
  Matrix<T> q_hat, k_hat, intra, p;  // [L, D], [L, D], [L, L] (lower), [D, D]
};

template <typename T>
void chunk_backward(const PathAttentionArgs<T>& a, int64_t slice, const Chunk<T>& c, const ChunkGrads<T>& g, T* dq,
                    T* dk, T* dw, T* dbeta) {
  const int64_t d = a.head_dim, size = c.size, off = (slice * a.length + c.start) * d;
  const auto [q, k, w, beta] = slice_rows(a, slice, c.start, size);
  auto dq_m = as_matrix(dq + off, size, d);
  auto dk_m = as_matrix(dk + off, size, d);
  auto dw_m = as_matrix(dw + off, size, d);
  VectorMap<T> db(dbeta + slice * a.length + c.start, size);
  const Matrix<T>& e = g.intra;
  // Q̂ = Q − m1·XW, K̂ = K − XM2ᵀ·W, intra = tril(Q·Kᵀ) − tril(m1·XM2), P = I − Wᵀ·XW.
  dq_m = g.q_hat;
  dq_m.noalias() += e * k;
  dk_m = g.k_hat;
  dk_m.noalias() += e.transpose() * q;
  Matrix<T> dm1 = -(e * c.xm2.transpose());
  dm1.noalias() -= g.q_hat * c.xw.transpose();
  dm1.template triangularView<Eigen::StrictlyUpper>().setZero();
  Matrix<T> dxm2 = -(c.m1.transpose() * e);
  dxm2.noalias() -= w * g.k_hat.transpose();
  dw_m.noalias() = -(c.xm2 * g.k_hat);
  dw_m.noalias() -= c.xw * g.p.transpose();
  Matrix<T> dxw = -(c.m1.transpose() * g.q_hat);
  dxw.noalias() -= w * g.p;
  // XW = X·W, XM2 = X·m2
  Matrix<T> dx = dxw * w.transpose();
  dx.noalias() += dxm2 * c.m2.transpose();
  dx.template triangularView<Eigen::StrictlyUpper>().setZero();
  dw_m.noalias() += c.x.transpose() * dxw;
  Matrix<T> dm2 = c.x.transpose() * dxm2;
  dm2.template triangularView<Eigen::Upper>().setZero();
  // m1 = tril(Q·Wᵀ), m2 = strict_lower(W·Kᵀ)
  dq_m.noalias() += dm1 * w;
  dw_m.noalias() += dm1.transpose() * q;
  dw_m.noalias() += dm2 * k;
  dk_m.noalias() += dm2.transpose() * w;
  // X = A⁻¹·diag(β): dβ += diag(A⁻ᵀ·dX), dA = −A⁻ᵀ·dX·Xᵀ on A's strict lower part.
  Matrix<T> y = dx;
  c.bgram.template triangularView<Eigen::UnitLower>().transpose().solveInPlace(y);
  db = y.diagonal();
  Matrix<T> da = -(y * c.x.transpose());
  da.template triangularView<Eigen::Upper>().setZero();
  // A − I = strict_lower(diag(β)·W·Wᵀ)
  db.noalias() += (da.array() * c.gram.array()).rowwise().sum().matrix();
  Matrix<T> dgram = beta.asDiagonal() * da;
  dw_m.noalias() += dgram * w;
  dw_m.noalias() += dgram.transpose() * w;
}

}  // namespace

template <typename T>
void path_attention_forward_chunked(const PathAttentionArgs<T>& a, int64_t chunk, T* o, T* lse) {
  const int64_t len = a.length, d = a.head_dim;
#pragma omp parallel
  {
    std::vector<Chunk<T>> chunks;
    Matrix<T> s, u, tmp;
#pragma omp for schedule(static)
    for (int64_t slice = 0; slice < a.batch_heads; ++slice) {
      auto v = as_matrix(a.v + slice * len * d, len, d);
      auto out = as_matrix(o + slice * len * d, len, d);
      prepare_chunks(a, slice, chunk, chunks);
      for (size_t b = 0; b < chunks.size(); ++b) {
        const int64_t start = chunks[b].start, size = chunks[b].size;
        chunk_logits(a, slice, chunks, b, s, u, tmp, static_cast<std::vector<Matrix<T>>*>(nullptr));
        softmax_rows(s, lse + slice * len + start);
        out.middleRows(start, size).noalias() = s * v.topRows(start + size);
      }
    }
  }
}

template <typename T>
void path_attention_backward_chunked(const PathAttentionArgs<T>& a, int64_t chunk, const T* o, const T* lse,
                                     const T* d_o, T* dq, T* dk, T* dv, T* dw, T* dbeta, T* d_cum_log_gate) {
  const int64_t len = a.length, d = a.head_dim;
#pragma omp parallel
  {
    std::vector<Chunk<T>> chunks;
    std::vector<ChunkGrads<T>> grads;
    std::vector<Matrix<T>> states;
    Matrix<T> p, dp, u, tmp, acc;
    Vector<T> delta;
#pragma omp for schedule(static)
    for (int64_t slice = 0; slice < a.batch_heads; ++slice) {
      const int64_t off = slice * len * d;
      auto v = as_matrix(a.v + off, len, d);
      auto out = as_matrix(o + off, len, d);
      auto dout = as_matrix(d_o + off, len, d);
      auto dv_m = as_matrix(dv + off, len, d);
      dv_m.setZero();
      T* dc = a.cum_log_gate && d_cum_log_gate ? d_cum_log_gate + slice * len : nullptr;
      if (dc) std::fill(dc, dc + len, T(0));
      prepare_chunks(a, slice, chunk, chunks);
      const size_t n = chunks.size();
      grads.resize(n);
      states.resize(n);
      for (size_t c = 0; c < n; ++c) {
        grads[c].k_hat.setZero(chunks[c].size, d);
        grads[c].p.setZero(d, d);
      }
      for (size_t b = 0; b < n; ++b) {
        const int64_t start = chunks[b].start, size = chunks[b].size;
        chunk_logits(a, slice, chunks, b, p, u, tmp, &states);
        probabilities_from_lse(p, lse + slice * len + start);
        softmax_rows_backward(p, dout.middleRows(start, size), out.middleRows(start, size),
                              v.topRows(start + size), dv_m.topRows(start + size), dp, delta);
        if (dc) gate_bias_backward(p, dc, start, a.gate_scale);
        p *= a.scale;  // the gradient of the unscaled PaTH logits
        grads[b].intra = p.middleCols(start, size);
        grads[b].intra.template triangularView<Eigen::StrictlyUpper>().setZero();
        // Cross-chunk scan: U_{c−1} = U_c·P_c; logits of key chunk c are U_c·K̂_cᵀ.
        acc.setZero(size, d);  // the gradient of U_{c−1}, then of Q̂_b
        for (size_t c = 0; c < b; ++c) {
          const Chunk<T>& cc = chunks[c];
          auto g_bc = p.middleCols(cc.start, cc.size);
          grads[c].k_hat.noalias() += g_bc.transpose() * states[c];
          if (c > 0) {
            grads[c].p.noalias() += states[c].transpose() * acc;
            tmp.noalias() = acc * cc.p.transpose();
            acc.swap(tmp);
          }
          acc.noalias() += g_bc * cc.k_hat;
        }
        grads[b].q_hat = acc;
      }
      for (size_t c = 0; c < n; ++c) chunk_backward(a, slice, chunks[c], grads[c], dq, dk, dw, dbeta);
    }
  }
}

template <typename T>
void path_attention_forward(const PathAttentionArgs<T>& a, T* o, T* lse) {
  path_attention_forward_chunked(a, kPathChunk, o, lse);
}

template <typename T>
void path_attention_backward(const PathAttentionArgs<T>& a, const T* o, const T* lse, const T* d_o, T* dq, T* dk,
                             T* dv, T* dw, T* dbeta, T* d_cum_log_gate) {
  path_attention_backward_chunked(a, kPathChunk, o, lse, d_o, dq, dk, dv, dw, dbeta, d_cum_log_gate);
}

template <typename T>
PathDecodeCache<T> path_decode_start(int64_t batch_heads, int64_t head_dim) {
  PathDecodeCache<T> cache;
  cache.batch_heads = batch_heads;
  cache.head_dim = head_dim;
  cache.keys.resize(batch_heads);
  cache.values.resize(batch_heads);
  cache.cum_log_gate.resize(batch_heads);
  return cache;
}

template <typename T>
void path_decode_step(PathDecodeCache<T>& cache, const T* q, const T* k, const T* v, const T* w, const T* beta,
                      const T* cum_log_gate, T scale, T gate_scale, T* o) {
  const int64_t d = cache.head_dim, t = ++cache.length;
#pragma omp parallel for schedule(static)
  for (int64_t sl = 0; sl < cache.batch_heads; ++sl) {
    std::vector<T>& keys = cache.keys[sl];
    std::vector<T>& values = cache.values[sl];
    ConstVectorMap<T> wt(w + sl * d, d);
    for (int64_t j = 0; j + 1 < t; ++j) {
      VectorMap<T> kj(keys.data() + j * d, d);
      kj -= (beta[sl] * wt.dot(kj)) * wt;
    }
    keys.insert(keys.end(), k + sl * d, k + (sl + 1) * d);
    values.insert(values.end(), v + sl * d, v + (sl + 1) * d);
    Matrix<T> s = scale * (ConstVectorMap<T>(q + sl * d, d).transpose() * as_matrix(keys.data(), t, d).transpose());
    if (cum_log_gate) {
      cache.cum_log_gate[sl].push_back(cum_log_gate[sl]);
      add_gate_bias(s, cache.cum_log_gate[sl].data(), t - 1, gate_scale);
    }
    T lse;
    softmax_rows(s, &lse);
    VectorMap<T>(o + sl * d, d).noalias() = (s * as_matrix(values.data(), t, d)).transpose();
  }
}

template void path_attention_forward<float>(const PathAttentionArgs<float>&, float*, float*);
template void path_attention_forward<double>(const PathAttentionArgs<double>&, double*, double*);
template void path_attention_backward<float>(const PathAttentionArgs<float>&, const float*, const float*, const float*,
                                             float*, float*, float*, float*, float*, float*);
template void path_attention_backward<double>(const PathAttentionArgs<double>&, const double*, const double*,
                                              const double*, double*, double*, double*, double*, double*, double*);
template void path_attention_forward_chunked<float>(const PathAttentionArgs<float>&, int64_t, float*, float*);
template void path_attention_forward_chunked<double>(const PathAttentionArgs<double>&, int64_t, double*, double*);
template void path_attention_backward_chunked<float>(const PathAttentionArgs<float>&, int64_t, const float*,
                                                     const float*, const float*, float*, float*, float*, float*,
                                                     float*, float*);
template void path_attention_backward_chunked<double>(const PathAttentionArgs<double>&, int64_t, const double*,
                                                      const double*, const double*, double*, double*, double*,
                                                      double*, double*, double*);
template PathDecodeCache<float> path_decode_start<float>(int64_t, int64_t);
template PathDecodeCache<double> path_decode_start<double>(int64_t, int64_t);
template void path_decode_step<float>(PathDecodeCache<float>&, const float*, const float*, const float*, const float*,
                                      const float*, const float*, float, float, float*);
template void path_decode_step<double>(PathDecodeCache<double>&, const double*, const double*, const double*,
                                       const double*, const double*, const double*, double, double, double*);

}  // namespace pathbench
