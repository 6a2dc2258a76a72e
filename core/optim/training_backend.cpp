// The CPU training backend and the device dispatch of make_training_backend.
#include "core/optim/training_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/device.h"
#include "core/error.h"
#include "core/model/transformer.h"

namespace pathbench {

#ifdef PATHBENCH_WITH_CUDA
std::unique_ptr<TrainingBackend> make_cuda_training_backend(const ModelConfig& model, const TrainingSetup& setup,
                                                            const BackendOptions& options);  // core/optim/cuda/training_backend.cpp
#endif

namespace {

class CpuBackend : public TrainingBackend {
 public:
  CpuBackend(const ModelConfig& config, const TrainingSetup& setup)
      : model_(config), trainer_(model_, setup.adamw, setup.schedule, setup.clip_norm) {
    model_.init_parameters(setup.init_seed);
  }

  TrainStep step(const TokenBatch& batch) override { return trainer_.step(batch); }

  Prediction predict(const TokenBatch& batch) override {
    Prediction p;
    p.loss = double(model_.forward_loss(batch));
    const int64_t n = batch.batch * batch.length, v = model_.config().vocab_size;
    const std::vector<float>& logits = model_.logits();
    p.argmax.resize(size_t(n));
    for (int64_t r = 0; r < n; ++r)
      p.argmax[r] = int32_t(std::max_element(logits.begin() + r * v, logits.begin() + (r + 1) * v) -
                            (logits.begin() + r * v));
    return p;
  }

  void prepare_ahead(TokenBatch&, bool) const override {}  // a CPU step's checks cost little beside it

  const ParameterSet<float>& download_parameters() override { return model_.params(); }
  void upload_parameters(const ParameterSet<float>& params) override { copy_parameter_values(params, model_.params()); }
  OptimizerState download_optimizer_state() override {
    AdamW<float>& opt = trainer_.optimizer();
    return {opt.first_moment(), opt.second_moment(), opt.steps()};
  }
  void upload_optimizer_state(const OptimizerState& state) override {
    check_optimizer_state(state, model_.params().count());
    AdamW<float>& opt = trainer_.optimizer();
    opt.first_moment() = state.first_moment;
    opt.second_moment() = state.second_moment;
    opt.set_steps(state.steps);
  }
  int64_t steps() const override { return trainer_.steps(); }
  std::string device_description() const override { return cpu_description(); }
  RecordedOpCall record_attention_call(int64_t layer) override { return model_.record_attention_call(layer); }

 private:
  Transformer<float> model_;
  Trainer<float> trainer_;
};

}  // namespace

void copy_parameter_values(const ParameterSet<float>& from, ParameterSet<float>& to) {
  const auto &a = from.entries(), &b = to.entries();
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    if (i >= a.size() || i >= b.size() || a[i].name != b[i].name || a[i].shape != b[i].shape)
      throw Error(fmt::format("parameters do not match the model: entry {} is '{}' where the model has '{}'", i,
                              i < a.size() ? a[i].name : "(none)", i < b.size() ? b[i].name : "(none)"));
  }
  to.values() = from.values();
}

void check_device_available(const std::string& device) {
  if (device == "cpu") return;
  if (device != "cuda") throw Error(fmt::format("unknown device '{}' (known: cpu, cuda)", device));
#ifdef PATHBENCH_WITH_CUDA
  if (!cuda_device_available()) throw Error("device 'cuda': no CUDA GPU is visible on this machine");
#else
  throw Error("device 'cuda' is not available: this build has no CUDA backend (configure with -DPATHBENCH_CUDA=ON)");
#endif
}

void check_optimizer_state(const OptimizerState& state, size_t count) {
  if (state.first_moment.size() != count || state.second_moment.size() != count || state.steps < 0)
    throw Error(fmt::format("optimizer state of {} and {} moments at step {} does not fit a model of {} parameters",
                            state.first_moment.size(), state.second_moment.size(), state.steps, count));
}

std::unique_ptr<TrainingBackend> make_training_backend(const ModelConfig& model, const TrainingSetup& setup,
                                                       const BackendOptions& options) {
  check_device_available(options.device);
  if (options.device == "cpu") {
    if (options.precision != Precision::fp32)
      throw Error(fmt::format("device 'cpu' computes in fp32 only (precision '{}' needs --device cuda)",
                              precision_name(options.precision)));
    return std::make_unique<CpuBackend>(model, setup);
  }
#ifdef PATHBENCH_WITH_CUDA
  return make_cuda_training_backend(model, setup, options);
#else
  throw std::logic_error("unreachable: check_device_available accepted cuda without a CUDA build");
#endif
}

}  // namespace pathbench
