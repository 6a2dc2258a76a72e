// RoPE: the rotation kernel and the `rope` encoding (rotate q and k, then softmax attention).
#include "core/attention/rope/rope.h"

#include <cmath>
#include <vector>

#include "core/attention/kernel_args.h"
#include "core/attention/registry_entry.h"
#include "core/attention/softmax/softmax_attention.h"

namespace pathbench {

template <typename T>
void rope_rotate(T* x, int64_t batch_heads, int64_t length, int64_t head_dim, double base, bool inverse,
                 int64_t position_offset) {
  const int64_t half = head_dim / 2;
  std::vector<T> cos_table(length * half), sin_table(length * half);  // [T, D/2]
  for (int64_t t = 0; t < length; ++t)
    for (int64_t m = 0; m < half; ++m) {
      double angle = double(t + position_offset) * std::pow(base, -2.0 * double(m) / double(head_dim));
      cos_table[t * half + m] = T(std::cos(angle));
      sin_table[t * half + m] = T(inverse ? -std::sin(angle) : std::sin(angle));
    }
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < batch_heads * length; ++row) {
    const int64_t t = row % length;
    T* xr = x + row * head_dim;
    for (int64_t m = 0; m < half; ++m) {
      T a = xr[m], b = xr[m + half], c = cos_table[t * half + m], s = sin_table[t * half + m];
      xr[m] = a * c - b * s;
      xr[m + half] = a * s + b * c;
    }
  }
}

template void rope_rotate<float>(float*, int64_t, int64_t, int64_t, double, bool, int64_t);
template void rope_rotate<double>(double*, int64_t, int64_t, int64_t, double, bool, int64_t);

std::string rope_head_dim_problem(int64_t head_dim) {
  return head_dim % 2 == 0 ? std::string() : std::string("rope needs an even head dimension");
}

namespace {

template <typename T>
class RopeEncoding : public PositionEncoding<T> {
 public:
  explicit RopeEncoding(const EncodingSetup<T>& setup) : base_(setup.options.at("base").template get<double>()) {}

  void forward(ParameterSet<T>&, const AttentionInputs<T>& in, T* o) override {
    const auto& d = in.dims;
    const int64_t bh = d.batch * d.heads, n = bh * d.length * d.head_dim;
    q_rot_.assign(in.q, in.q + n);
    k_rot_.assign(in.k, in.k + n);
    rope_rotate(q_rot_.data(), bh, d.length, d.head_dim, base_, false);
    rope_rotate(k_rot_.data(), bh, d.length, d.head_dim, base_, false);
    lse_.resize(bh * d.length);
    softmax_attention_forward(args(in), o, lse_.data());
  }

  void backward(ParameterSet<T>&, const AttentionInputs<T>& in, const T* o, const T* d_o, T* dq, T* dk, T* dv,
                T*) override {
    const auto& d = in.dims;
    const int64_t bh = d.batch * d.heads;
    softmax_attention_backward(args(in), o, lse_.data(), d_o, dq, dk, dv, static_cast<T*>(nullptr));
    rope_rotate(dq, bh, d.length, d.head_dim, base_, true);
    rope_rotate(dk, bh, d.length, d.head_dim, base_, true);
  }

  OpCallView<T> op_call() const override {
    OpCallView<T> call("rope");
    call.settings.rope_base = base_;
    return call;
  }

 private:
  SoftmaxAttentionArgs<T> args(const AttentionInputs<T>& in) const {
    return kernel_args<SoftmaxAttentionArgs<T>>(in.dims, q_rot_.data(), k_rot_.data(), in.v);
  }

  double base_;
  std::vector<T> q_rot_, k_rot_;  // [BH, T, D] rotated queries and keys
  std::vector<T> lse_;            // [BH, T]
};

}  // namespace

EncodingInfo rope_encoding_info() {
  return make_encoding_info<RopeEncoding>(
      "rope", "rotary position embedding on queries and keys, softmax attention",
      {{"base", OptionType::Float, 10000.0, "rotation base: θ_m = base^(−2m/D)", 1.0}},
      rope_head_dim_problem);
}

}  // namespace pathbench
