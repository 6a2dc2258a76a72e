// GPU transformer forward and backward over the residual stream, mirroring transformer.cpp.
#include "core/model/cuda/transformer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "core/error.h"
#include "core/model/batch_preparation.h"
#include "core/ops/cuda/linear.h"

namespace pathbench::cuda {

Transformer::Transformer(const ModelConfig& config, Precision precision)
    : host_(config), ctx_(precision), device_params_(host_.params(), precision == Precision::bf16, ctx_.stream()) {
  const ParameterSet<float>& layout = host_.params();
  embedding_ = layout.find("embedding");
  final_norm_ = layout.find("final_norm");
  head_ = config.tie_embeddings ? embedding_ : layout.find("head");
  blocks_.resize(config.n_layers);
  for (int64_t l = 0; l < config.n_layers; ++l) {
    const std::string prefix = fmt::format("layers.{}.", l);
    Block& b = blocks_[l];
    b.norm1 = layout.find(prefix + "norm1");
    b.norm2 = layout.find(prefix + "norm2");
    b.attn = make_attention_layer(ctx_, device_params_, prefix + "attn.", config);
    b.mlp = std::make_unique<MlpLayer>(ctx_, device_params_, prefix + "mlp.", config);
  }
  residual_.resize(config.n_layers + 1);
  totals_.reserve(1);
  totals_host_.reserve(1);
}

void Transformer::init_parameters(uint64_t seed) {
  host_.init_parameters(seed);
  upload_parameters();
}

void Transformer::upload_parameters() { device_params_.upload_values(host_.params()); }

ParameterSet<float>& Transformer::download_parameters() {
  device_params_.download(host_.params());
  return host_.params();
}

void Transformer::prepare(const TokenBatch& batch, Pass pass) {
  const ModelConfig& cfg = config();
  const int64_t v = cfg.vocab_size, c = cfg.d_model;
  const bool training = pass == Pass::training;
  // Done ahead (TrainingBackend::prepare_ahead), the check and the plan are not done again here.
  const BatchPreparation* ahead = preparation_for(batch, v, training);
  if (!ahead) check_batch(batch, v);
  batch_ = batch.batch;
  length_ = batch.length;
  pass_ = pass;
  const int64_t n = batch_ * length_;
  plan_layout_ = embedding_plan_layout(n, v);
  const size_t ints = staged_int_count();

  bool moved = staged_ints_.reserve(ints);
  moved |= staged_weights_.reserve(size_t(n));
  moved |= batch_ints_.reserve(ints);
  moved |= batch_weights_.reserve(size_t(n));
  // A forward-only pass adds every block's output into residual_[0] in place (nothing reads a
  // block's input again); training keeps each residual for the backward.
  for (size_t i = 0; i < residual_.size(); ++i)
    if (training || i == 0) moved |= residual_[i].reserve(size_t(n * c));
  // The bf16 copies of the normed activations exist in bf16 mode only (null otherwise, so the norms
  // skip them and the products take the fp32 values). In bf16 mode the norms before the MLP and the
  // output head write their bf16 copy alone: only products read those, and they read bf16 there.
  // The attention layer's input keeps both (its encodings read fp32).
  const bool bf16_mode = ctx_.precision() == Precision::bf16;
  if (bf16_mode) moved |= xn_out16_.reserve(size_t(n * c));
  if (bf16_mode && training) moved |= d_x16_.reserve(size_t(n * c));
  for (Block& b : blocks_) {
    moved |= b.xn1.reserve(size_t(n * c));
    if (training) moved |= b.x_mid.reserve(size_t(n * c));
    if (!bf16_mode) moved |= b.xn2.reserve(size_t(n * c));
    if (bf16_mode)
      for (auto* buf : {&b.xn1_16, &b.xn2_16}) moved |= buf->reserve(size_t(n * c));
    for (auto* buf : {&b.rstd1, &b.rstd2}) moved |= buf->reserve(size_t(n));
    moved |= b.attn->reserve(batch_, length_, pass);
    moved |= b.mlp->reserve(n, pass);
  }
  if (!bf16_mode) moved |= xn_out_.reserve(size_t(n * c));
  moved |= rstd_out_.reserve(size_t(n));
  if (training) moved |= d_x_.reserve(size_t(n * c)) | d_tmp_.reserve(size_t(n * c));
  for (auto* buf : {&logits_, &probs_}) moved |= buf->reserve(size_t(n * v));
  if (training) moved |= bf16_mode ? d_logits16_.reserve(size_t(n * v)) : d_logits_.reserve(size_t(n * v));
  moved |= loss_partials_.reserve(size_t(cross_entropy_blocks(n, v)));
  moved |= argmax_.reserve(size_t(n));
  moved |= scratch_.reserve(size_t(std::max(kColumnScratchPerColumn, plan_layout_.max_segments) * c));
  const int64_t hd = cfg.n_heads * cfg.head_dim();
  // the widest product operand: q/k/v, SwiGLU's fused gate and up pre-activations, or the logits
  moved |= ctx_.reserve_staging(size_t(n * std::max({c, 3 * hd, 2 * cfg.hidden(), v})));

  int32_t* staged = staged_ints_.data();
  std::memcpy(staged, batch.tokens.data(), sizeof(int32_t) * n);
  std::memcpy(staged + n, batch.targets.data(), sizeof(int32_t) * n);
  if (training && ahead)  // only the backward reads the plan
    std::memcpy(staged + 2 * n, ahead->embedding_plan.data(), sizeof(int32_t) * plan_layout_.size);
  else if (training)
    build_embedding_plan(batch.tokens.data(), n, v, staged + 2 * n);
  std::memcpy(staged_weights_.data(), batch.weights.data(), sizeof(float) * n);
  if (moved) ++generation_;
}

size_t Transformer::staged_int_count() const {
  const size_t n = size_t(batch_ * length_);
  return 2 * n + (pass_ == Pass::training ? plan_layout_.size : 0);
}

void Transformer::enqueue_upload() {
  const int64_t n = batch_ * length_;
  const size_t ints = staged_int_count();
  PATHBENCH_CUDA_CHECK(cudaMemcpyAsync(batch_ints_.data(), staged_ints_.data(), ints * sizeof(int32_t),
                                       cudaMemcpyHostToDevice, ctx_.stream()));
  PATHBENCH_CUDA_CHECK(cudaMemcpyAsync(batch_weights_.data(), staged_weights_.data(), size_t(n) * sizeof(float),
                                       cudaMemcpyHostToDevice, ctx_.stream()));
}

void Transformer::enqueue_forward() {
  const ModelConfig& cfg = config();
  const int64_t n = batch_ * length_, c = cfg.d_model, v = cfg.vocab_size;
  const float eps = float(cfg.norm_eps);
  cudaStream_t s = ctx_.stream();
  CudaParameters& p = device_params_;
  // Each norm also writes the bf16 operand of the products that follow. In training it also starts the
  // next residual (x_mid = x_in, then x_out = x_mid), which the block adds its output to; a
  // forward-only pass keeps one residual, residual_[0], and adds each output into it in place.
  const bool in_place = pass_ != Pass::training;
  const auto residual = [&](size_t i) { return residual_[in_place ? 0 : i].data(); };
  embedding_forward(batch_ints_.data(), p.value(embedding_), residual(0), n, c, s);
  for (size_t l = 0; l < blocks_.size(); ++l) {
    Block& b = blocks_[l];
    float* x_mid = in_place ? residual(0) : b.x_mid.data();
    rmsnorm_forward(residual(l), p.value(b.norm1), b.xn1.data(), b.rstd1.data(), n, c, eps, s,
                    in_place ? nullptr : x_mid, b.xn1_16.data());
    b.attn->forward({b.xn1.data(), b.xn1_16.data()}, x_mid, batch_, length_);
    rmsnorm_forward(x_mid, p.value(b.norm2), b.xn2.data(), b.rstd2.data(), n, c, eps, s,
                    in_place ? nullptr : residual(l + 1), b.xn2_16.data());
    b.mlp->forward({b.xn2.data(), b.xn2_16.data()}, residual(l + 1), n);
  }
  rmsnorm_forward(residual(blocks_.size()), p.value(final_norm_), xn_out_.data(), rstd_out_.data(), n, c, eps, s,
                  nullptr, xn_out16_.data());
  linear_forward(ctx_, {xn_out_.data(), xn_out16_.data()}, p.weight(head_), logits_.data(), n, c, v);
}

void Transformer::enqueue_loss() {
  const int64_t n = batch_ * length_;
  cross_entropy_forward(logits_.data(), batch_ints_.data() + n, batch_weights_.data(), probs_.data(),
                        loss_partials_.data(), totals_.data(), n, config().vocab_size, ctx_.stream());
}

void Transformer::enqueue_backward() {
  if (pass_ != Pass::training)
    throw std::logic_error("GPU transformer: backward after a forward-only pass (no gradient buffers for this batch)");
  const ModelConfig& cfg = config();
  const int64_t n = batch_ * length_, c = cfg.d_model, v = cfg.vocab_size;
  cudaStream_t s = ctx_.stream();
  CudaParameters& p = device_params_;
  // In bf16 mode the logit gradients exist only in bf16 and each norm's backward also writes the
  // updated residual gradient in bf16: the operands of the products that read them next.
  cross_entropy_backward(probs_.data(), batch_ints_.data() + n, batch_weights_.data(), totals_.data(), 1.0f,
                         d_logits_.data(), n, v, s, d_logits16_.data());
  linear_backward(ctx_, {xn_out_.data(), xn_out16_.data()}, p.weight(head_), {d_logits_.data(), d_logits16_.data()},
                  d_tmp_.data(), n, c, v);
  PATHBENCH_CUDA_CHECK(cudaMemsetAsync(d_x_.data(), 0, size_t(n * c) * sizeof(float), s));
  rmsnorm_backward(residual_.back().data(), p.value(final_norm_), rstd_out_.data(), d_tmp_.data(), d_x_.data(),
                   p.grad(final_norm_), scratch_.data(), n, c, s, d_x16_.data());
  const MatrixInput d_x{d_x_.data(), d_x16_.data()};
  for (size_t l = blocks_.size(); l-- > 0;) {
    Block& b = blocks_[l];
    // x_out = x_mid + mlp(norm2(x_mid)): d_x flows to x_mid directly and through the MLP.
    b.mlp->backward(d_x, d_tmp_.data());
    rmsnorm_backward(b.x_mid.data(), p.value(b.norm2), b.rstd2.data(), d_tmp_.data(), d_x_.data(), p.grad(b.norm2),
                     scratch_.data(), n, c, s, d_x16_.data());
    // x_mid = x_in + attn(norm1(x_in))
    b.attn->backward(d_x, d_tmp_.data());
    rmsnorm_backward(residual_[l].data(), p.value(b.norm1), b.rstd1.data(), d_tmp_.data(), d_x_.data(),
                     p.grad(b.norm1), scratch_.data(), n, c, s, d_x16_.data());
  }
  embedding_backward(batch_ints_.data() + 2 * n, d_x_.data(), p.grad(embedding_), scratch_.data(), n, v, c, s);
}

float Transformer::read_loss() {
  PATHBENCH_CUDA_CHECK(cudaMemcpyAsync(totals_host_.data(), totals_.data(), sizeof(CrossEntropyTotals),
                                       cudaMemcpyDeviceToHost, ctx_.stream()));
  ctx_.synchronize();
  return loss_value(*totals_host_.data());
}

void Transformer::enqueue_forward_loss(const TokenBatch& batch, Pass pass) {
  prepare(batch, pass);
  enqueue_upload();
  enqueue_forward();
  enqueue_loss();
}

float Transformer::forward_loss(const TokenBatch& batch, Pass pass) {
  enqueue_forward_loss(batch, pass);
  return read_loss();
}

void Transformer::backward() {
  enqueue_backward();
  ctx_.synchronize();
}

std::vector<float> Transformer::download_logits() {
  std::vector<float> out(size_t(batch_ * length_ * config().vocab_size));
  copy_to_host(out.data(), logits_.data(), out.size(), ctx_.stream());
  return out;
}

float Transformer::predict(const TokenBatch& batch, std::vector<int32_t>& argmax) {
  const int64_t n = batch.batch * batch.length;
  argmax_host_.reserve(size_t(n));  // before any work is queued: a pinned reallocation waits for the device
  enqueue_forward_loss(batch, Pass::forward);
  cudaStream_t s = ctx_.stream();
  argmax_rows(logits_.data(), argmax_.data(), n, config().vocab_size, s);
  PATHBENCH_CUDA_CHECK(cudaMemcpyAsync(argmax_host_.data(), argmax_.data(), size_t(n) * sizeof(int32_t),
                                       cudaMemcpyDeviceToHost, s));
  const float loss = read_loss();  // the one wait
  argmax.assign(argmax_host_.data(), argmax_host_.data() + n);
  return loss;
}

RecordedOpCall Transformer::record_attention_call(int64_t layer) const {
  if (layer < 0 || layer >= int64_t(blocks_.size()))
    throw Error(fmt::format("attention call of layer {}: the model has layers 0–{}", layer, blocks_.size() - 1));
  if (pass_ != Pass::training)
    throw Error("attention call: the last pass did not train, so it has no gradients to record");
  return blocks_[size_t(layer)].attn->record_op_call();
}

}  // namespace pathbench::cuda
