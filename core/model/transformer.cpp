// Transformer forward and backward over the residual stream.
#include "core/model/transformer.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "core/params/init.h"
#include "core/ops/cross_entropy.h"
#include "core/ops/embedding.h"
#include "core/ops/linear.h"
#include "core/ops/rmsnorm.h"

namespace pathbench {

template <typename T>
Transformer<T>::Transformer(const ModelConfig& config) : config_(config) {
  if (config.vocab_size <= 0) throw Error(fmt::format("model: vocab_size must be positive, got {}", config.vocab_size));
  const int64_t c = config.d_model, v = config.vocab_size;
  embedding_ = params_.add("embedding", {v, c});
  blocks_.resize(config.n_layers);
  for (int64_t l = 0; l < config.n_layers; ++l) {
    const std::string prefix = fmt::format("layers.{}.", l);
    Block& b = blocks_[l];
    b.norm1 = params_.add(prefix + "norm1", {c}, false);
    b.attn = std::make_unique<AttentionLayer<T>>(params_, prefix + "attn.", config);
    b.norm2 = params_.add(prefix + "norm2", {c}, false);
    b.mlp = std::make_unique<MlpLayer<T>>(params_, prefix + "mlp.", config);
  }
  final_norm_ = params_.add("final_norm", {c}, false);
  head_ = config.tie_embeddings ? embedding_ : params_.add("head", {v, c});
}

template <typename T>
void Transformer<T>::init_parameters(uint64_t seed) {
  init_normal(params_, embedding_, seed, config_.init_std);
  for (Block& b : blocks_) {
    init_constant(params_, b.norm1, 1.0);
    init_constant(params_, b.norm2, 1.0);
    b.attn->init_parameters(params_, seed);
    b.mlp->init_parameters(params_, seed);
  }
  init_constant(params_, final_norm_, 1.0);
  if (!config_.tie_embeddings) init_normal(params_, head_, seed, config_.init_std);
}

template <typename T>
void Transformer<T>::forward(const int32_t* tokens, int64_t batch, int64_t length) {
  const int64_t n = batch * length, c = config_.d_model, v = config_.vocab_size;
  check_tokens(tokens, n, v);
  batch_ = batch;
  length_ = length;
  tokens_.assign(tokens, tokens + n);
  const T eps = T(config_.norm_eps);
  std::vector<T>* x = nullptr;
  for (size_t l = 0; l < blocks_.size(); ++l) {
    Block& b = blocks_[l];
    for (auto* buf : {&b.x_in, &b.xn1, &b.x_mid, &b.xn2}) buf->resize(n * c);
    b.rstd1.resize(n);
    b.rstd2.resize(n);
    if (l == 0)
      embedding_forward(tokens, params_.value(embedding_), b.x_in.data(), n, c);
    else
      b.x_in = *x;
    rmsnorm_forward(b.x_in.data(), params_.value(b.norm1), b.xn1.data(), b.rstd1.data(), n, c, eps);
    b.attn->forward(params_, b.xn1.data(), b.x_mid.data(), batch, length);
    for (int64_t i = 0; i < n * c; ++i) b.x_mid[i] += b.x_in[i];
    rmsnorm_forward(b.x_mid.data(), params_.value(b.norm2), b.xn2.data(), b.rstd2.data(), n, c, eps);
    x_out_.resize(n * c);
    b.mlp->forward(params_, b.xn2.data(), x_out_.data(), n);
    for (int64_t i = 0; i < n * c; ++i) x_out_[i] += b.x_mid[i];
    x = &x_out_;
  }
  xn_out_.resize(n * c);
  rstd_out_.resize(n);
  rmsnorm_forward(x_out_.data(), params_.value(final_norm_), xn_out_.data(), rstd_out_.data(), n, c, eps);
  logits_.resize(n * v);
  linear_forward(xn_out_.data(), params_.value(head_), logits_.data(), n, c, v);
}

template <typename T>
T Transformer<T>::loss(const int32_t* targets, const float* weights) {
  const int64_t n = batch_ * length_, v = config_.vocab_size;
  check_targets(targets, weights, n, v);
  targets_ = targets;
  weights_ = weights;
  probs_.resize(n * v);
  return cross_entropy_forward(logits_.data(), targets, weights, probs_.data(), n, v);
}

template <typename T>
T Transformer<T>::forward_loss(const TokenBatch& batch) {
  forward(batch.tokens.data(), batch.batch, batch.length);
  return loss(batch.targets.data(), batch.weights.data());
}

template <typename T>
void Transformer<T>::backward() {
  const int64_t n = batch_ * length_, c = config_.d_model, v = config_.vocab_size;
  d_logits_.resize(n * v);
  cross_entropy_backward(probs_.data(), targets_, weights_, T(1), d_logits_.data(), n, v);
  d_tmp_.assign(n * c, T(0));  // gradient w.r.t. the final normed stream
  linear_backward(xn_out_.data(), params_.value(head_), d_logits_.data(), d_tmp_.data(), params_.grad(head_), n, c, v);
  d_x_.assign(n * c, T(0));    // gradient w.r.t. the residual stream
  rmsnorm_backward(x_out_.data(), params_.value(final_norm_), rstd_out_.data(), d_tmp_.data(), d_x_.data(),
                   params_.grad(final_norm_), n, c);
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
    Block& b = *it;
    // x_out = x_mid + mlp(norm2(x_mid)): d_x flows to x_mid directly and through the MLP.
    std::fill(d_tmp_.begin(), d_tmp_.end(), T(0));
    b.mlp->backward(params_, d_x_.data(), d_tmp_.data());
    rmsnorm_backward(b.x_mid.data(), params_.value(b.norm2), b.rstd2.data(), d_tmp_.data(), d_x_.data(),
                     params_.grad(b.norm2), n, c);
    // x_mid = x_in + attn(norm1(x_in))
    std::fill(d_tmp_.begin(), d_tmp_.end(), T(0));
    b.attn->backward(params_, d_x_.data(), d_tmp_.data());
    rmsnorm_backward(b.x_in.data(), params_.value(b.norm1), b.rstd1.data(), d_tmp_.data(), d_x_.data(),
                     params_.grad(b.norm1), n, c);
  }
  embedding_backward(tokens_.data(), d_x_.data(), params_.grad(embedding_), n, c);
}

template <typename T>
typename Transformer<T>::DecodeState Transformer<T>::start_decode(int64_t batch) const {
  DecodeState state;
  state.batch = batch;
  for (const Block& b : blocks_) state.layers.push_back(b.attn->start_decode(batch));
  return state;
}

template <typename T>
void Transformer<T>::decode_step(DecodeState& state, const int32_t* tokens, T* logits) {
  const int64_t n = state.batch, c = config_.d_model, v = config_.vocab_size;
  for (int64_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= v)
      throw Error(fmt::format("token {} of sequence {} is outside the vocabulary of size {}", tokens[i], i, v));
  const T eps = T(config_.norm_eps);
  std::vector<T> x(n * c), xn(n * c), y(n * c), rstd(n);  // [B, C] residual, normed, block output
  embedding_forward(tokens, params_.value(embedding_), x.data(), n, c);
  for (size_t l = 0; l < blocks_.size(); ++l) {
    Block& b = blocks_[l];
    rmsnorm_forward(x.data(), params_.value(b.norm1), xn.data(), rstd.data(), n, c, eps);
    b.attn->decode_step(params_, *state.layers[l], xn.data(), y.data(), n);
    for (int64_t i = 0; i < n * c; ++i) x[i] += y[i];
    rmsnorm_forward(x.data(), params_.value(b.norm2), xn.data(), rstd.data(), n, c, eps);
    b.mlp->forward(params_, xn.data(), y.data(), n);
    for (int64_t i = 0; i < n * c; ++i) x[i] += y[i];
  }
  rmsnorm_forward(x.data(), params_.value(final_norm_), xn.data(), rstd.data(), n, c, eps);
  linear_forward(xn.data(), params_.value(head_), logits, n, c, v);
}

template <typename T>
RecordedOpCall Transformer<T>::record_attention_call(int64_t layer) const {
  if (layer < 0 || layer >= int64_t(blocks_.size()))
    throw Error(fmt::format("attention call of layer {}: the model has layers 0–{}", layer, blocks_.size() - 1));
  return blocks_[size_t(layer)].attn->record_op_call();
}

template class Transformer<float>;
template class Transformer<double>;

}  // namespace pathbench
