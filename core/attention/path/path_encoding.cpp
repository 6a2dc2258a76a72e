// The `path` encoding: PaTH's projection and kernel, optionally with the FoX gate (see path_fox.cpp).
#include "core/attention/path/path_encoding.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/attention/kernel_args.h"
#include "core/attention/path/path.h"
#include "core/attention/registry_entry.h"

namespace pathbench {

namespace {

template <typename T>
PathAttentionArgs<T> kernel_args(const AttentionInputs<T>& in, const T* w, const T* beta, const T* cum,
                                 T gate_scale) {
  auto a = kernel_args<PathAttentionArgs<T>>(in.dims, in.q, in.k, in.v);
  a.w = w;
  a.beta = beta;
  a.cum_log_gate = cum;
  a.gate_scale = gate_scale;
  return a;
}

// PaTH's decoding state: the kernel's key cache, the last inputs the short convolution still
// sees, and the gate's running sum.
template <typename T>
struct PathCache : DecodeCache {
  AttentionDims dims;
  PathDecodeCache<T> kernel;
  std::vector<T> recent_x;  // [B, m, C], the last m ≤ kPathConvWidth inputs
  int64_t recent = 0;       // m
  std::vector<T> cum;       // [B, H] c_t of the gate
};

}  // namespace

std::vector<OptionSpec> path_encoding_options(bool with_gate) {
  std::vector<OptionSpec> specs = path_projection_options();
  if (with_gate)
    for (auto& s : forget_gate_options()) specs.push_back(s);
  return specs;
}

template <typename T>
PathEncoding<T>::PathEncoding(const EncodingSetup<T>& setup, bool with_gate) : projection_(setup) {
  if (with_gate) gate_ = std::make_unique<ForgetGate<T>>(setup);
}

template <typename T>
void PathEncoding<T>::init_parameters(ParameterSet<T>& params, uint64_t seed) {
  projection_.init_parameters(params, seed);
  if (gate_) gate_->init_parameters(params, seed);
}

template <typename T>
void PathEncoding<T>::forward(ParameterSet<T>& params, const AttentionInputs<T>& in, T* o) {
  const auto& d = in.dims;
  projection_.forward(params, in.x, d);
  cum_ = gate_ ? gate_->forward(params, in.x, d) : nullptr;
  lse_.resize(d.batch * d.heads * d.length);
  path_attention_forward(kernel_args(in, projection_.w(), projection_.beta(), cum_, gate_ ? gate_->gate_scale() : T(1)),
                         o, lse_.data());
}

template <typename T>
void PathEncoding<T>::backward(ParameterSet<T>& params, const AttentionInputs<T>& in, const T* o, const T* d_o, T* dq,
                               T* dk, T* dv, T* dx) {
  const auto& d = in.dims;
  const int64_t nt = d.batch * d.heads * d.length;
  dw_.resize(nt * d.head_dim);
  dbeta_.resize(nt);
  dcum_.resize(nt);
  path_attention_backward(kernel_args(in, projection_.w(), projection_.beta(), cum_, gate_ ? gate_->gate_scale() : T(1)),
                          o, lse_.data(), d_o, dq, dk, dv, dw_.data(), dbeta_.data(), gate_ ? dcum_.data() : nullptr);
  projection_.backward(params, in.x, d, dw_.data(), dbeta_.data(), dx);
  if (gate_) gate_->backward(params, in.x, d, dcum_.data(), dx);
}

// After the backward, dcum_ holds the gradient with respect to the per-token log gates
// (ForgetGate::backward turns it over in place).
template <typename T>
OpCallView<T> PathEncoding<T>::op_call() const {
  OpCallView<T> call(gate_ ? "path_fox" : "path");
  call.w = projection_.w(), call.beta = projection_.beta(), call.dw = dw_.data(), call.dbeta = dbeta_.data();
  if (gate_) {
    call.settings.gate_scale = double(gate_->gate_scale());
    call.cum_gate = cum_, call.d_log_gate = dcum_.data();
  }
  return call;
}

template <typename T>
std::unique_ptr<DecodeCache> PathEncoding<T>::start_decode(const AttentionDims& dims) {
  auto cache = std::make_unique<PathCache<T>>();
  cache->dims = dims;
  cache->kernel = path_decode_start<T>(dims.batch * dims.heads, dims.head_dim);
  cache->cum.assign(dims.batch * dims.heads, T(0));
  return cache;
}

template <typename T>
void PathEncoding<T>::decode_step(ParameterSet<T>& params, DecodeCache& base, const DecodeInputs<T>& in, T* o) {
  auto* cache = dynamic_cast<PathCache<T>*>(&base);
  if (!cache) throw std::logic_error("decode_step: cache was not made by this encoding's start_decode");
  AttentionDims d = cache->dims;
  const int64_t b = d.batch, c = d.width, hd = d.heads * d.head_dim;
  // The projection of the newest token depends on the last kPathConvWidth inputs only: run it on
  // that window and keep its last position.
  const int64_t m = std::min(cache->recent + 1, kPathConvWidth), keep = m - 1;
  std::vector<T> window(b * m * c);
  for (int64_t bi = 0; bi < b; ++bi) {
    const T* old_rows = cache->recent_x.data() + (bi * cache->recent + cache->recent - keep) * c;
    std::copy_n(old_rows, keep * c, &window[bi * m * c]);
    std::copy_n(in.x + bi * c, c, &window[(bi * m + keep) * c]);
  }
  cache->recent_x = window;
  cache->recent = m;
  d.length = m;
  projection_.forward(params, window.data(), d);
  std::vector<T> w(b * hd), beta(b * d.heads);
  for (int64_t sl = 0; sl < b * d.heads; ++sl) {
    std::copy_n(projection_.w() + (sl * m + m - 1) * d.head_dim, d.head_dim, &w[sl * d.head_dim]);
    beta[sl] = projection_.beta()[sl * m + m - 1];
  }
  if (gate_) gate_->decode_step(params, in.x, d, cache->cum.data());
  path_decode_step(cache->kernel, in.q, in.k, in.v, w.data(), beta.data(), gate_ ? cache->cum.data() : nullptr,
                   T(1) / std::sqrt(T(d.head_dim)), gate_ ? gate_->gate_scale() : T(1), o);
}

template class PathEncoding<float>;
template class PathEncoding<double>;

namespace {

template <typename T>
class PlainPathEncoding : public PathEncoding<T> {
 public:
  explicit PlainPathEncoding(const EncodingSetup<T>& setup) : PathEncoding<T>(setup, false) {}
};

}  // namespace

EncodingInfo path_encoding_info() {
  return make_encoding_info<PlainPathEncoding>(
      "path", "PaTH: data-dependent Householder transforms between query and key, softmax attention",
      path_encoding_options(false), [](int64_t) { return std::string(); });
}

}  // namespace pathbench
