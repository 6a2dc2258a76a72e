// One training step of a model: forward, masked loss, backward, gradient clipping, AdamW with the
// scheduled learning rate.
#pragma once
#include "core/model/transformer.h"
#include "core/optim/adamw.h"

namespace pathbench {

struct TrainStep {
  double loss = 0;
  double grad_norm = 0;  // before clipping
  double lr = 0;
  // The GPU's time for the step's queued work (timing events around it), without the host's work
  // before the launch and its wait after; < 0 where not measured (a CPU step is all host).
  double device_ms = -1;
  // The host's time preparing the batch before the launch (validation, staging copies, the
  // embedding plan); < 0 where not measured.
  double prepare_ms = -1;
};

template <typename T>
class Trainer {
 public:
  Trainer(Transformer<T>& model, AdamWConfig adamw, LrSchedule schedule, double clip_norm);
  TrainStep step(const TokenBatch& batch);
  AdamW<T>& optimizer() { return optimizer_; }
  int64_t steps() const { return optimizer_.steps(); }

 private:
  Transformer<T>& model_;
  AdamW<T> optimizer_;
  LrSchedule schedule_;
  double clip_norm_;
};

}  // namespace pathbench
