// The GPU training step: eager on a new batch shape, then captured once and replayed.
#include "core/optim/cuda/trainer.h"

#include <chrono>
#include <vector>

namespace pathbench::cuda {

Trainer::Trainer(Transformer& model, AdamWConfig adamw, LrSchedule schedule, double clip_norm, bool use_graph)
    : model_(model), config_(adamw), schedule_(schedule), clip_norm_(clip_norm), use_graph_(use_graph) {
  const ParameterSet<float>& layout = model.params();
  const size_t count = layout.count();
  cudaStream_t s = model.context().stream();
  m_.reserve(count);
  v_.reserve(count);
  PATHBENCH_CUDA_CHECK(cudaMemsetAsync(m_.data(), 0, count * sizeof(float), s));
  PATHBENCH_CUDA_CHECK(cudaMemsetAsync(v_.data(), 0, count * sizeof(float), s));
  std::vector<uint8_t> decay(count, 0);
  for (const auto& e : layout.entries())
    std::fill(decay.begin() + e.offset, decay.begin() + e.offset + e.size, e.weight_decay ? 1 : 0);
  decay_.reserve(count);
  copy_to_device(decay_.data(), decay.data(), count, s);
  norm_partial_.reserve(kGradNormBlocks);
  grad_norm_.reserve(1);
  clip_scale_.reserve(1);
  terms_.reserve(1);
  terms_host_.reserve(1);
  readback_.reserve(1);
}

void Trainer::download_state(std::vector<float>& first_moment, std::vector<float>& second_moment) {
  const size_t count = model_.params().count();
  cudaStream_t s = model_.context().stream();
  first_moment.resize(count);
  second_moment.resize(count);
  copy_to_host(first_moment.data(), m_.data(), count, s);
  copy_to_host(second_moment.data(), v_.data(), count, s);
}

void Trainer::upload_state(const std::vector<float>& first_moment, const std::vector<float>& second_moment,
                           int64_t steps) {
  cudaStream_t s = model_.context().stream();
  copy_to_device(m_.data(), first_moment.data(), m_.size(), s);
  copy_to_device(v_.data(), second_moment.data(), v_.size(), s);
  t_ = steps;
}

void Trainer::enqueue_step() {
  Context& ctx = model_.context();
  cudaStream_t s = ctx.stream();
  CudaParameters& p = model_.device_params();
  PATHBENCH_CUDA_CHECK(
      cudaMemcpyAsync(terms_.data(), terms_host_.data(), sizeof(AdamWStepTerms), cudaMemcpyHostToDevice, s));
  model_.enqueue_upload();
  p.zero_grad();
  model_.enqueue_forward();
  model_.enqueue_loss();
  model_.enqueue_backward();
  grad_norm_and_clip_scale(p.grads(), int64_t(p.count()), clip_norm_, norm_partial_.data(), grad_norm_.data(),
                           clip_scale_.data(), s);
  const AdamWConstants constants{float(config_.beta1), float(config_.beta2), float(config_.eps)};
  adamw_update(p.values(), p.values_bf16(), p.grads(), m_.data(), v_.data(), decay_.data(), clip_scale_.data(),
               terms_.data(), constants, int64_t(p.count()), s);
  PATHBENCH_CUDA_CHECK(cudaMemcpyAsync(&readback_.data()->totals, model_.loss_totals(), sizeof(CrossEntropyTotals),
                                       cudaMemcpyDeviceToHost, s));
  PATHBENCH_CUDA_CHECK(
      cudaMemcpyAsync(&readback_.data()->grad_norm, grad_norm_.data(), sizeof(double), cudaMemcpyDeviceToHost, s));
}

TrainStep Trainer::step(const TokenBatch& batch) {
  const auto prepare_start = std::chrono::steady_clock::now();
  model_.prepare(batch, Pass::training);
  TrainStep out;
  out.prepare_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - prepare_start).count();
  out.lr = schedule_.at(t_);
  *terms_host_.data() = AdamWStepTerms(adamw_terms(config_, out.lr, t_ + 1));

  const StepKey key{batch.batch, batch.length, model_.buffer_generation()};
  Context& ctx = model_.context();
  if (graph_.ready() && !(key == graph_key_)) graph_.reset();
  if (use_graph_ && !graph_.ready() && key == eager_key_) {
    graph_.capture(ctx.stream(), [this] { enqueue_step(); });
    graph_key_ = key;
  }
  device_time_.begin(ctx.stream());
  if (graph_.ready()) {
    graph_.launch(ctx.stream());
  } else {
    enqueue_step();
    eager_key_ = key;
  }
  device_time_.end(ctx.stream());
  ctx.synchronize();
  out.device_ms = device_time_.elapsed_ms();
  ++t_;
  out.loss = double(loss_value(readback_.data()->totals));
  out.grad_norm = readback_.data()->grad_norm;
  return out;
}

}  // namespace pathbench::cuda
