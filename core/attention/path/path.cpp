// PaTH attention, CPU, blocked UT form (docs/design.md §3): per (batch, head) slice, every chunk of C
// tokens gets its UT quantities (X, the chunk product P, queries moved to the chunk start, keys moved
// to the chunk end, the logits inside the chunk). The logits against earlier chunks use the keys
// moved forward to the query chunk's start: after each chunk all earlier keys take one D×D update
// (·P_bᵀ), the mirror of the query scan of docs/design.md §3 with the same work, done as one
// larger product per chunk. Backward reruns the forward sweep, sends the logit gradients back
// through the key moves (a reverse sweep), then through each chunk's UT formulas. Slices in
// parallel; also the decoding step.
#include "core/attention/path/path.h"

#include <algorithm>
#include <cmath>

#include "core/attention/attention_rows.h"
#include "core/linalg.h"

namespace pathbench {

namespace {

// The UT-transform quantities of one chunk (rows start … start+L−1 of a slice; s … e below) that
// the logits and the backward use.
template <typename T>
struct Chunk {
  int64_t start = 0, size = 0;
  Matrix<T> gram;   // [L, L] W·Wᵀ
  Matrix<T> ainv;   // [L, L] A⁻¹, A = I + strict_lower(diag(β)·W·Wᵀ), unit lower triangular
  Matrix<T> x;      // [L, L] X = A⁻¹·diag(β), lower triangular
  Matrix<T> m1;     // [L, L] tril(Q·Wᵀ)
  Matrix<T> wm2;    // [L, D+L] [W | m2], m2 = strict_lower(W·Kᵀ)
  Matrix<T> xr;     // [L, D+L] X·[W | m2] = [XW | XM2]
  Matrix<T> q_hat;  // [L, D] queries moved to the chunk start: row r = q_rᵀ H_r ⋯ H_s
  Matrix<T> k_hat;  // [L, D] keys moved to the chunk end: row j = (H_e ⋯ H_{j+1} k_j)ᵀ
  Matrix<T> p;      // [D, D] the chunk's product H_e ⋯ H_s = I − Wᵀ·X·W
  Matrix<T> intra;  // [L, L] unscaled logits inside the chunk, tril(Q·Kᵀ) − tril(m1·X·m2)

  auto xw() const { return xr.leftCols(xr.cols() - size); }
  auto xm2() const { return xr.rightCols(size); }
};

// The chunk's rows of q, k, w and β.
template <typename T>
struct ChunkInputs {
  ConstMatrixMap<T> q, k, w;
  ConstVectorMap<T> beta;
};

template <typename T>
ChunkInputs<T> chunk_inputs(const PathAttentionArgs<T>& a, int64_t slice, int64_t start, int64_t size) {
  const int64_t off = (slice * a.length + start) * a.head_dim;
  return {as_matrix(a.q + off, size, a.head_dim), as_matrix(a.k + off, size, a.head_dim),
          as_matrix(a.w + off, size, a.head_dim), ConstVectorMap<T>(a.beta + slice * a.length + start, size)};
}

// Scratch of prepare_chunk.
template <typename T>
struct PrepareScratch {
  Matrix<T> mr;  // [L, D+L] m1·[XW | XM2]
};

template <typename T>
void prepare_chunk(const PathAttentionArgs<T>& a, int64_t slice, int64_t start, int64_t size, Chunk<T>& c,
                   PrepareScratch<T>& s) {
  const int64_t d = a.head_dim, l = size;
  const auto [q, k, w, beta] = chunk_inputs(a, slice, start, size);
  c.start = start;
  c.size = l;
  c.gram.noalias() = w * w.transpose();
  c.x.noalias() = beta.asDiagonal() * c.gram;  // A − I below the diagonal
  c.ainv.setIdentity(l, l);
  c.x.template triangularView<Eigen::UnitLower>().solveInPlace(c.ainv);
  c.x.noalias() = c.ainv * beta.asDiagonal();
  c.m1.noalias() = q * w.transpose();
  c.m1.template triangularView<Eigen::StrictlyUpper>().setZero();
  c.wm2.resize(l, d + l);
  c.wm2.leftCols(d) = w;
  c.wm2.rightCols(l).noalias() = w * k.transpose();
  c.wm2.rightCols(l).template triangularView<Eigen::Upper>().setZero();
  // Products of triangular factors are computed dense: faster than Eigen's triangular products at
  // these sizes.
  c.xr.noalias() = c.x * c.wm2;
  s.mr.noalias() = c.m1 * c.xr;
  c.q_hat = q - s.mr.leftCols(d);
  c.intra.noalias() = q * k.transpose();
  c.intra -= s.mr.rightCols(l);
  c.intra.template triangularView<Eigen::StrictlyUpper>().setZero();
  c.k_hat = k;
  c.k_hat.noalias() -= c.xm2().transpose() * w;
  c.p.setIdentity(d, d);
  c.p.noalias() -= w.transpose() * c.xw();
}

template <typename T>
void prepare_chunks(const PathAttentionArgs<T>& a, int64_t slice, int64_t chunk, std::vector<Chunk<T>>& chunks,
                    PrepareScratch<T>& scratch) {
  chunks.resize((a.length + chunk - 1) / chunk);
  for (size_t c = 0; c < chunks.size(); ++c) {
    const int64_t start = int64_t(c) * chunk;
    prepare_chunk(a, slice, start, std::min(chunk, a.length - start), chunks[c], scratch);
  }
}

// Logits of query chunk b against keys 0 … e_b−1 (scaled, gated, masked) into s. `moved` holds the
// keys of the earlier chunks moved to the start of chunk b (rows 0 … s_b−1: row j is
// (H_{s_b−1} ⋯ H_{j+1} k_j)ᵀ), so the cross-chunk logits are one product Q̂_b·movedᵀ.
template <typename T>
void chunk_logits(const PathAttentionArgs<T>& a, int64_t slice, const Chunk<T>& cb, const Matrix<T>& moved,
                  Matrix<T>& s) {
  s.resize(cb.size, cb.start + cb.size);
  s.leftCols(cb.start).noalias() = cb.q_hat * moved.topRows(cb.start).transpose();
  s.middleCols(cb.start, cb.size) = cb.intra;
  s *= a.scale;
  if (a.cum_log_gate) add_gate_bias(s, a.cum_log_gate + slice * a.length, cb.start, a.gate_scale);
  mask_future(s, cb.start);
}

// Moves the keys past chunk b: rows 0 … s_b−1 become (P_b·key)ᵀ = keyᵀ·P_bᵀ, then chunk b's keys
// moved to its end are appended (rows s_b … e_b−1).
template <typename T>
void move_keys_past(const Chunk<T>& cb, Matrix<T>& moved, Matrix<T>& tmp) {
  if (cb.start > 0) {
    tmp.noalias() = moved.topRows(cb.start) * cb.p.transpose();
    moved.topRows(cb.start) = tmp;
  }
  moved.middleRows(cb.start, cb.size) = cb.k_hat;
}

// Gradients of one chunk's UT quantities, and the scratch that turns them into input gradients.
template <typename T>
struct ChunkGrads {
  Matrix<T> q_hat, k_hat, intra, p;  // [L, D], [L, D], [L, L] (lower), [D, D]
};

template <typename T>
struct ChunkScratch {
  Matrix<T> top;     // [L, D+L] [dQ̂ | dIntra]
  Matrix<T> bottom;  // [D, D+L] [dP | dK̂ᵀ]
  Matrix<T> right;   // [D+L, D] [dPᵀ; dK̂]
  Matrix<T> ndm1;    // [L, L] −dm1
  Matrix<T> ndxr;    // [L, D+L] −[dXW | dXM2]
  Matrix<T> nxdxr;   // [L, D+L] −Xᵀ·[dXW | dXM2]; its right block becomes −dm2
  Matrix<T> ndx;     // [L, L] −dX
  Matrix<T> ny;      // [L, L] −A⁻ᵀ·dX
  Matrix<T> dg;      // [L, L] dA, then d(W·Wᵀ) on the strict lower part
};

// dq, dk, dw (rows of the chunk, overwritten) and dbeta from the chunk's gradients. With
// Q̂ = Q − m1·XW, K̂ = K − XM2ᵀ·W, intra = tril(Q·Kᵀ) − tril(m1·XM2), P = I − Wᵀ·XW,
// XW = X·W, XM2 = X·m2, m1 = tril(Q·Wᵀ), m2 = strict_lower(W·Kᵀ), X = A⁻¹·diag(β).
// Every correction term enters with a minus sign, so the scratch holds negated gradients.
template <typename T>
void chunk_backward(const PathAttentionArgs<T>& a, int64_t slice, const Chunk<T>& c, const ChunkGrads<T>& g,
                    ChunkScratch<T>& s, T* dq, T* dk, T* dw, T* dbeta) {
  const int64_t d = a.head_dim, l = c.size, off = (slice * a.length + c.start) * d;
  const auto [q, k, w, beta] = chunk_inputs(a, slice, c.start, l);
  auto dq_m = as_matrix(dq + off, l, d);
  auto dk_m = as_matrix(dk + off, l, d);
  auto dw_m = as_matrix(dw + off, l, d);
  VectorMap<T> db(dbeta + slice * a.length + c.start, l);
  const Matrix<T>& e = g.intra;
  s.top.resize(l, d + l);
  s.top << g.q_hat, e;
  s.bottom.resize(d, d + l);
  s.bottom << g.p, g.k_hat.transpose();
  s.right.resize(d + l, d);
  s.right << g.p.transpose(), g.k_hat;
  // dm1 = −tril(dQ̂·XWᵀ + dIntra·XM2ᵀ)
  s.ndm1.noalias() = s.top * c.xr.transpose();
  s.ndm1.template triangularView<Eigen::StrictlyUpper>().setZero();
  // [dXW | dXM2] = −(m1ᵀ·[dQ̂ | dIntra] + W·[dP | dK̂ᵀ])
  s.ndxr.noalias() = c.m1.transpose() * s.top;
  s.ndxr.noalias() += w * s.bottom;
  // dX = tril([dXW | dXM2]·[W | m2]ᵀ); Xᵀ·[dXW | dXM2] = [dW's share | dm2 before its mask]
  s.ndx.noalias() = s.ndxr * c.wm2.transpose();
  s.ndx.template triangularView<Eigen::StrictlyUpper>().setZero();
  s.nxdxr.noalias() = c.x.transpose() * s.ndxr;
  auto ndm2 = s.nxdxr.rightCols(l);
  ndm2.template triangularView<Eigen::Upper>().setZero();
  // X = A⁻¹·diag(β): dβ = diag(A⁻ᵀ·dX) + Σ_n dA_mn·(W·Wᵀ)_mn, dA = −strict_lower(A⁻ᵀ·dX·Xᵀ)
  s.ny.noalias() = c.ainv.transpose() * s.ndx;
  db = -s.ny.diagonal();
  s.dg.noalias() = s.ny * c.x.transpose();
  s.dg.template triangularView<Eigen::Upper>().setZero();
  db.noalias() += (s.dg.array() * c.gram.array()).rowwise().sum().matrix();
  s.dg = beta.asDiagonal() * s.dg;
  // dW = (dG + dGᵀ)·W + Xᵀ·dXW − XW·dPᵀ − XM2·dK̂ + dm1ᵀ·Q + dm2·K
  s.dg += s.dg.transpose().eval();
  dw_m.noalias() = s.dg * w;
  dw_m -= s.nxdxr.leftCols(d);
  dw_m.noalias() -= c.xr * s.right;
  dw_m.noalias() -= s.ndm1.transpose() * q;
  dw_m.noalias() -= ndm2 * k;
  // dQ = dQ̂ + dm1·W + dIntra·K, dK = dK̂ + dIntraᵀ·Q + dm2ᵀ·W
  dq_m = g.q_hat;
  dq_m.noalias() -= s.ndm1 * w;
  dq_m.noalias() += e * k;
  dk_m = g.k_hat;
  dk_m.noalias() += e.transpose() * q;
  dk_m.noalias() -= ndm2.transpose() * w;
}

}  // namespace

template <typename T>
void path_attention_forward_chunked(const PathAttentionArgs<T>& a, int64_t chunk, T* o, T* lse) {
  const int64_t len = a.length, d = a.head_dim;
#pragma omp parallel
  {
    std::vector<Chunk<T>> chunks;
    PrepareScratch<T> scratch;
    Matrix<T> s, moved(len, d), tmp;  // moved: [T, D] keys moved to the current chunk's start
#pragma omp for schedule(static)
    for (int64_t slice = 0; slice < a.batch_heads; ++slice) {
      auto v = as_matrix(a.v + slice * len * d, len, d);
      auto out = as_matrix(o + slice * len * d, len, d);
      prepare_chunks(a, slice, chunk, chunks, scratch);
      for (size_t b = 0; b < chunks.size(); ++b) {
        const Chunk<T>& cb = chunks[b];
        chunk_logits(a, slice, cb, moved, s);
        softmax_rows(s, lse + slice * len + cb.start);
        out.middleRows(cb.start, cb.size).noalias() = s * v.topRows(cb.start + cb.size);
        if (b + 1 < chunks.size()) move_keys_past(cb, moved, tmp);
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
    PrepareScratch<T> prepare_scratch;
    std::vector<ChunkGrads<T>> grads;
    ChunkScratch<T> scratch;
    std::vector<Matrix<T>> moved_at, direct;  // per chunk b: the moved keys [s_b, D] and their logit gradient
    Matrix<T> p, dp, moved(len, d), tmp, acc;
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
      prepare_chunks(a, slice, chunk, chunks, prepare_scratch);
      const size_t n = chunks.size();
      if (n == 0) continue;  // T = 0
      grads.resize(n);
      moved_at.resize(n);
      direct.resize(n);
      // Forward over the chunks: logits, softmax backward, and the gradients of Q̂_b and of the
      // moved keys as the logits of chunk b see them.
      for (size_t b = 0; b < n; ++b) {
        const Chunk<T>& cb = chunks[b];
        const int64_t start = cb.start, size = cb.size;
        chunk_logits(a, slice, cb, moved, p);
        probabilities_from_lse(p, lse + slice * len + start);
        softmax_rows_backward(p, dout.middleRows(start, size), out.middleRows(start, size),
                              v.topRows(start + size), dv_m.topRows(start + size), dp, delta);
        if (dc) gate_bias_backward(p, dc, start, a.gate_scale);
        p *= a.scale;  // the gradient of the unscaled PaTH logits
        grads[b].intra = p.middleCols(start, size);
        grads[b].intra.template triangularView<Eigen::StrictlyUpper>().setZero();
        moved_at[b] = moved.topRows(start);
        grads[b].q_hat.noalias() = p.leftCols(start) * moved_at[b];
        direct[b].noalias() = p.leftCols(start).transpose() * cb.q_hat;
        if (b + 1 < n) move_keys_past(cb, moved, tmp);
      }
      // Backward over the chunks: acc is the gradient of the keys moved past chunk b
      // ([e_b, D]); moving them past chunk b took rows·P_bᵀ and appended K̂_b. Nothing uses the
      // keys moved past the last chunk.
      acc.resize(len, d);
      grads[n - 1].k_hat.setZero(chunks[n - 1].size, d);
      grads[n - 1].p.setZero(d, d);
      acc.topRows(chunks[n - 1].start) = direct[n - 1];
      for (size_t b = n - 1; b-- > 0;) {
        const Chunk<T>& cb = chunks[b];
        grads[b].k_hat = acc.middleRows(cb.start, cb.size);
        grads[b].p.noalias() = acc.topRows(cb.start).transpose() * moved_at[b];
        tmp.noalias() = acc.topRows(cb.start) * cb.p;
        acc.topRows(cb.start) = tmp + direct[b];
      }
      for (size_t c = 0; c < n; ++c) chunk_backward(a, slice, chunks[c], grads[c], scratch, dq, dk, dw, dbeta);
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
