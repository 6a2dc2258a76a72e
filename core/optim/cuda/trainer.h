// One training step of the GPU model, as trainer.h does on the CPU: forward, masked loss, backward,
// global-norm clipping, AdamW with the scheduled learning rate. The whole step (batch upload
// included) is captured once per batch shape in a CUDA graph and replayed; the first step at a
// shape runs eagerly (it loads the kernels and lets cuBLAS pick its algorithms outside capture).
#pragma once
#include <vector>

#include "core/cuda/graph.h"
#include "core/cuda/span_timer.h"
#include "core/model/cuda/transformer.h"
#include "core/optim/cuda/adamw.h"
#include "core/optim/trainer.h"

namespace pathbench::cuda {

class Trainer {
 public:
  Trainer(Transformer& model, AdamWConfig adamw, LrSchedule schedule, double clip_norm, bool use_graph = true);
  // Synchronizes: returns the loss, the gradient norm before clipping, the learning rate used, the
  // device's time for the step's work and the host's time preparing the batch.
  TrainStep step(const TokenBatch& batch);
  int64_t steps() const { return t_; }
  // AdamW's moments [P] (the parameters' layout) and step count, for checkpoints.
  void download_state(std::vector<float>& first_moment, std::vector<float>& second_moment);
  void upload_state(const std::vector<float>& first_moment, const std::vector<float>& second_moment, int64_t steps);

 private:
  struct Readback {
    CrossEntropyTotals totals;
    double grad_norm;
  };
  void enqueue_step();

  Transformer& model_;
  AdamWConfig config_;
  LrSchedule schedule_;
  double clip_norm_;
  bool use_graph_;
  int64_t t_ = 0;
  DeviceBuffer<float> m_{"AdamW moments"}, v_{"AdamW moments"};  // [P]
  DeviceBuffer<uint8_t> decay_{"AdamW decay mask"};              // [P]
  DeviceBuffer<double> norm_partial_{"gradient norm partial sums"};
  DeviceBuffer<double> grad_norm_{"gradient norm"};
  DeviceBuffer<float> clip_scale_{"clip scale"};
  DeviceBuffer<AdamWStepTerms> terms_{"AdamW step terms"};
  PinnedBuffer<AdamWStepTerms> terms_host_{"AdamW step terms"};
  PinnedBuffer<Readback> readback_{"step results"};
  // The batch shape and buffer generation a step ran at; a graph is captured on the second step
  // at the same key and replayed while the key holds.
  struct StepKey {
    int64_t batch = 0, length = 0;
    uint64_t generation = 0;
    bool operator==(const StepKey&) const = default;
  };
  Graph graph_;
  DeviceSpanTimer device_time_;
  StepKey graph_key_, eager_key_;
};

}  // namespace pathbench::cuda
