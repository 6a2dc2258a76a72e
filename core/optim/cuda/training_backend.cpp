// The GPU training backend: cuda::Transformer and cuda::Trainer behind TrainingBackend.
#include <memory>

#include "core/device.h"
#include "core/model/batch_preparation.h"
#include "core/optim/cuda/trainer.h"
#include "core/optim/training_backend.h"

namespace pathbench {

namespace {

class CudaBackend : public TrainingBackend {
 public:
  CudaBackend(const ModelConfig& config, const TrainingSetup& setup, const BackendOptions& options)
      : model_(config, options.precision),
        trainer_(model_, setup.adamw, setup.schedule, setup.clip_norm, options.cuda_graph) {
    model_.init_parameters(setup.init_seed);
  }

  TrainStep step(const TokenBatch& batch) override { return trainer_.step(batch); }

  Prediction predict(const TokenBatch& batch) override {
    Prediction p;
    p.loss = double(model_.predict(batch, p.argmax));
    return p;
  }

  void prepare_ahead(TokenBatch& batch, bool for_training) const override {
    // The model's configuration is fixed at construction, so reading it here while a step runs on
    // another thread is safe.
    batch.prepared = prepare_batch(batch, model_.config().vocab_size, for_training);
  }

  const ParameterSet<float>& download_parameters() override { return model_.download_parameters(); }
  void upload_parameters(const ParameterSet<float>& params) override {
    copy_parameter_values(params, model_.params());
    model_.upload_parameters();
  }
  OptimizerState download_optimizer_state() override {
    OptimizerState state;
    trainer_.download_state(state.first_moment, state.second_moment);
    state.steps = trainer_.steps();
    return state;
  }
  void upload_optimizer_state(const OptimizerState& state) override {
    check_optimizer_state(state, model_.params().count());
    trainer_.upload_state(state.first_moment, state.second_moment, state.steps);
  }
  int64_t steps() const override { return trainer_.steps(); }
  std::string device_description() const override { return cuda_device_description(); }
  RecordedOpCall record_attention_call(int64_t layer) override { return model_.record_attention_call(layer); }

 private:
  cuda::Transformer model_;
  cuda::Trainer trainer_;
};

}  // namespace

std::unique_ptr<TrainingBackend> make_cuda_training_backend(const ModelConfig& model, const TrainingSetup& setup,
                                                            const BackendOptions& options) {
  return std::make_unique<CudaBackend>(model, setup, options);
}

}  // namespace pathbench
