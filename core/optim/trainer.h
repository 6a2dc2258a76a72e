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
