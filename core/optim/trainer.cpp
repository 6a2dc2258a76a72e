// Trainer: the training step.
#include "core/optim/trainer.h"

namespace pathbench {

template <typename T>
Trainer<T>::Trainer(Transformer<T>& model, AdamWConfig adamw, LrSchedule schedule, double clip_norm)
    : model_(model), optimizer_(model.params(), adamw), schedule_(schedule), clip_norm_(clip_norm) {}

template <typename T>
TrainStep Trainer<T>::step(const TokenBatch& batch) {
  TrainStep out;
  model_.params().zero_grad();
  out.loss = double(model_.forward_loss(batch));
  model_.backward();
  out.grad_norm = clip_grad_norm(model_.params().grads(), clip_norm_);
  out.lr = schedule_.at(optimizer_.steps());
  optimizer_.step(model_.params(), out.lr);
  return out;
}

template class Trainer<float>;
template class Trainer<double>;

}  // namespace pathbench
