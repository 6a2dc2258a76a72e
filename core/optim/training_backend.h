// A model with its optimizer on one device behind one small interface, so the experiment runner
// trains, evaluates and checkpoints the same way on the CPU and on the GPU (`--device cuda`).
//
//   auto backend = make_training_backend(model_config, setup, {"cuda", Precision::bf16});
//   TrainStep s = backend->step(batch);          // loss, grad norm (before clipping), lr
//   Prediction p = backend->predict(eval_batch); // loss and argmax per position; no update
//   const ParameterSet<float>& w = backend->download_parameters();  // for checkpoints
//
// Parameters live in a ParameterSet<float> with the CPU model's names and layout on every device,
// so checkpoints written from either device load on the other. Every call is synchronous and
// every failure (bad token, GPU out of memory, failed launch) throws pathbench::Error.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/attention/op_call_record.h"
#include "core/model/batch.h"
#include "core/model/model_config.h"
#include "core/params/parameters.h"
#include "core/optim/adamw.h"
#include "core/optim/trainer.h"
#include "core/precision.h"

namespace pathbench {

struct BackendOptions {
  std::string device = "cpu";             // cpu | cuda
  Precision precision = Precision::fp32;  // products' precision; the CPU computes fp32 only
  bool cuda_graph = true;                 // cuda: capture the training step in a CUDA graph
};

struct TrainingSetup {
  AdamWConfig adamw;
  LrSchedule schedule;
  double clip_norm = 1.0;  // ≤ 0: no clipping
  uint64_t init_seed = 0;  // parameter initialization (identical on every device)
};

// AdamW's state, for checkpoints that resume: the moments in the parameters' layout and the count
// of steps taken.
struct OptimizerState {
  std::vector<float> first_moment, second_moment;  // [P]
  int64_t steps = 0;
};

struct Prediction {
  double loss = 0;              // masked cross-entropy of the batch
  std::vector<int32_t> argmax;  // [B, T] the most likely next token at each position
};

class TrainingBackend {
 public:
  virtual ~TrainingBackend() = default;
  // One optimizer step on the batch.
  virtual TrainStep step(const TokenBatch& batch) = 0;
  // Forward only: the loss and the argmax predictions; parameters and optimizer state unchanged.
  virtual Prediction predict(const TokenBatch& batch) = 0;
  // Work on a coming batch that a step (for_training) or a prediction would otherwise do before
  // its launch, kept in batch.prepared (core/model/batch_preparation.h): the GPU backend checks the
  // tokens (pathbench::Error as step would) and builds the embedding plan; the CPU backend does
  // nothing. It reads only the model's configuration, so another thread may call it while this
  // backend runs a step.
  virtual void prepare_ahead(TokenBatch& batch, bool for_training) const = 0;
  // The current parameter values and the last step's gradients (clipped), on the host.
  virtual const ParameterSet<float>& download_parameters() = 0;
  // Replaces the parameter values from a set of the same names and shapes (optimizer state kept).
  virtual void upload_parameters(const ParameterSet<float>& params) = 0;
  virtual OptimizerState download_optimizer_state() = 0;
  // Throws pathbench::Error when the moments do not have the parameters' size.
  virtual void upload_optimizer_state(const OptimizerState& state) = 0;
  virtual int64_t steps() const = 0;
  // The processor, in words, for results and benchmarks.
  virtual std::string device_description() const = 0;
  // Layer `layer`'s attention-op call of the last step, for `pathbench op` (throws pathbench::Error
  // for a missing layer or before any training step).
  virtual RecordedOpCall record_attention_call(int64_t layer) = 0;
};

// Throws pathbench::Error unless `device` is cpu, or cuda in a CUDA build with a visible GPU.
void check_device_available(const std::string& device);

// Throws pathbench::Error for an unknown device, a device this build or machine lacks, or a
// precision the device does not offer.
std::unique_ptr<TrainingBackend> make_training_backend(const ModelConfig& model, const TrainingSetup& setup,
                                                       const BackendOptions& options);

// Throws pathbench::Error unless `from` has exactly the entries (names, shapes) of `to`; then
// copies the values.
void copy_parameter_values(const ParameterSet<float>& from, ParameterSet<float>& to);
// Throws pathbench::Error unless both moments hold `count` values.
void check_optimizer_state(const OptimizerState& state, size_t count);

}  // namespace pathbench
