// Stick-breaking attention, CPU: blocks of query rows against the keys they can see; the weights of
// a block come from one matrix product and a per-row reverse cumulative sum of softplus(z) in log
// space. No T×T×D memory; slices in parallel.
#include "core/attention/sba/sba.h"

#include <algorithm>
#include <cmath>

#include "core/attention/attention_rows.h"
#include "core/attention/backward_slice.h"
#include "core/attention/kernel_args.h"
#include "core/attention/registry_entry.h"
#include "core/linalg.h"

namespace pathbench {

namespace {

constexpr int64_t kRowBlock = 64;

// Weights of query rows r0..r1−1 against keys 0..r1−1 of one slice: z = s·q·kᵀ (kept, [rows, r1])
// and a (zero where j > i). The softplus sum runs from the query's own key back to key 0.
template <typename T>
void block_weights(const StickBreakingArgs<T>& a, int64_t slice, int64_t r0, int64_t r1, Matrix<T>& z,
                   Matrix<T>& w) {
  const int64_t len = a.length, d = a.head_dim, rows = r1 - r0;
  auto q = as_matrix(a.q + slice * len * d, len, d);
  auto k = as_matrix(a.k + slice * len * d, len, d);
  z.resize(rows, r1);
  z.noalias() = a.scale * (q.middleRows(r0, rows) * k.topRows(r1).transpose());
  // softplus(z) = max(z, 0) + log1p(exp(−|z|)); logσ(z) = z − softplus(z)
  w = z.array().max(T(0)) + (-z.array().abs()).exp().log1p();
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t qi = r0 + i;
    T later = 0;  // Σ_{j<l≤i} softplus(z_il)
    for (int64_t j = qi; j >= 0; --j) {
      const T sp = w(i, j);
      w(i, j) = z(i, j) - sp - later;
      later += sp;
    }
  }
  w = w.array().exp();
  flush_negligible(w);
  for (int64_t i = 0; i < rows; ++i) w.row(i).tail(r1 - r0 - i - 1).setZero();  // keys after the query
}

}  // namespace

template <typename T>
void stick_breaking_forward(const StickBreakingArgs<T>& a, T* o) {
  const int64_t len = a.length, d = a.head_dim;
#pragma omp parallel
  {
    Matrix<T> z, w;  // [rows, r1]
#pragma omp for schedule(static)
    for (int64_t slice = 0; slice < a.batch_heads; ++slice) {
      auto v = as_matrix(a.v + slice * len * d, len, d);
      auto out = as_matrix(o + slice * len * d, len, d);
      for (int64_t r0 = 0; r0 < len; r0 += kRowBlock) {
        const int64_t r1 = std::min(len, r0 + kRowBlock), rows = r1 - r0;
        block_weights(a, slice, r0, r1, z, w);
        out.middleRows(r0, rows).noalias() = w * v.topRows(r1);
        if (a.remainder_to_current)
          for (int64_t i = 0; i < rows; ++i) out.row(r0 + i) += (T(1) - w.row(i).sum()) * v.row(r0 + i);
      }
    }
  }
}

template <typename T>
void stick_breaking_backward(const StickBreakingArgs<T>& a, const T*, const T* d_o, T* dq, T* dk, T* dv) {
  const int64_t len = a.length;
#pragma omp parallel
  {
    Matrix<T> z, w, g;  // [rows, r1] logits (then σ(z)), weights, then gradients
#pragma omp for schedule(static)
    for (int64_t slice = 0; slice < a.batch_heads; ++slice) {
      auto [q, k, v, dout, dq_m, dk_m, dv_m] = backward_slice(a, d_o, dq, dk, dv, slice);
      for (int64_t r0 = 0; r0 < len; r0 += kRowBlock) {
        const int64_t r1 = std::min(len, r0 + kRowBlock), rows = r1 - r0;
        block_weights(a, slice, r0, r1, z, w);
        auto dout_b = dout.middleRows(r0, rows);
        dv_m.topRows(r1).noalias() += w.transpose() * dout_b;
        g.noalias() = dout_b * v.topRows(r1).transpose();  // dA
        if (a.remainder_to_current)
          for (int64_t i = 0; i < rows; ++i) {
            const T current = dout_b.row(i).dot(v.row(r0 + i));
            g.row(i).array() -= current;
            dv_m.row(r0 + i) += (T(1) - w.row(i).sum()) * dout_b.row(i);
          }
        // γ_ij = dA_ij·a_ij is the gradient of log a_ij. log a_ij = logσ(z_ij) − Σ_{j<l≤i} softplus(z_il),
        // so dz_il = γ_il·σ(−z_il) − σ(z_il)·Σ_{j<l} γ_ij.
        g.array() *= w.array();
        z = (T(1) + (-z.array()).exp()).inverse();  // σ(z), vectorized
        for (int64_t i = 0; i < rows; ++i) {
          const int64_t qi = r0 + i;
          T earlier = 0;  // Σ_{j<l} γ_ij
          for (int64_t l = 0; l <= qi; ++l) {
            const T gamma = g(i, l), sig = z(i, l);
            g(i, l) = gamma * (T(1) - sig) - sig * earlier;
            earlier += gamma;
          }
          for (int64_t l = qi + 1; l < r1; ++l) g(i, l) = 0;
        }
        dq_m.middleRows(r0, rows).noalias() = a.scale * (g * k.topRows(r1));
        dk_m.topRows(r1).noalias() += a.scale * (g.transpose() * q.middleRows(r0, rows));
      }
    }
  }
}

template <typename T>
void stick_breaking_weights(const StickBreakingArgs<T>& a, int64_t slice, T* weights) {
  Matrix<T> z, w;
  as_matrix(weights, a.length, a.length).setZero();
  for (int64_t r0 = 0; r0 < a.length; r0 += kRowBlock) {
    const int64_t r1 = std::min(a.length, r0 + kRowBlock);
    block_weights(a, slice, r0, r1, z, w);
    as_matrix(weights, a.length, a.length).block(r0, 0, r1 - r0, r1) = w;
  }
}

template void stick_breaking_forward<float>(const StickBreakingArgs<float>&, float*);
template void stick_breaking_forward<double>(const StickBreakingArgs<double>&, double*);
template void stick_breaking_backward<float>(const StickBreakingArgs<float>&, const float*, const float*, float*,
                                             float*, float*);
template void stick_breaking_backward<double>(const StickBreakingArgs<double>&, const double*, const double*,
                                              double*, double*, double*);
template void stick_breaking_weights<float>(const StickBreakingArgs<float>&, int64_t, float*);
template void stick_breaking_weights<double>(const StickBreakingArgs<double>&, int64_t, double*);

namespace {

template <typename T>
class StickBreakingEncoding : public PositionEncoding<T> {
 public:
  explicit StickBreakingEncoding(const EncodingSetup<T>& setup)
      : remainder_to_current_(setup.options.at("remainder_to_current").template get<bool>()) {}

  void forward(ParameterSet<T>&, const AttentionInputs<T>& in, T* o) override { stick_breaking_forward(args(in), o); }

  void backward(ParameterSet<T>&, const AttentionInputs<T>& in, const T* o, const T* d_o, T* dq, T* dk, T* dv,
                T*) override {
    stick_breaking_backward(args(in), o, d_o, dq, dk, dv);
  }

  OpCallView<T> op_call() const override {
    OpCallView<T> call("sba");
    call.settings.remainder_to_current = remainder_to_current_;
    return call;
  }

 private:
  StickBreakingArgs<T> args(const AttentionInputs<T>& in) const {
    auto a = kernel_args<StickBreakingArgs<T>>(in.dims, in.q, in.k, in.v);
    a.remainder_to_current = remainder_to_current_;
    return a;
  }

  bool remainder_to_current_;
};

}  // namespace

EncodingInfo sba_encoding_info() {
  return make_encoding_info<StickBreakingEncoding>(
      "sba", "stick-breaking attention (log space, current token included), no softmax, no PE",
      {{"remainder_to_current", OptionType::Bool, false,
        "add the unassigned weight (1 − Σ_j a_ij) to the current token's value v_i"}},
      [](int64_t) { return std::string(); });
}

}  // namespace pathbench
