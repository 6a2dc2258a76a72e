// replay_training: a checkpoint's next training steps on any device, with per-tensor gradient norms.
#include "experiments/replay.h"

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"
#include "core/optim/training_backend.h"
#include "core/params/non_finite.h"
#include "experiments/checkpoint.h"
#include "experiments/train_run.h"

namespace pathbench {

namespace {

// Each tensor's gradient norm before clipping: the backend keeps the clipped gradients, scaled by
// clip_norm / grad_norm when grad_norm exceeded clip_norm (adamw.h).
ReplayedStep describe_step(int64_t step, const TrainStep& r, const ParameterSet<float>& params, double clip_norm) {
  ReplayedStep out{step, r.loss, r.grad_norm, r.lr, {}, {}};
  const bool clipped = clip_norm > 0 && r.grad_norm > clip_norm;
  const double unclip = !clipped ? 1.0 : std::isfinite(r.grad_norm) ? r.grad_norm / clip_norm : std::nan("");
  const std::vector<float>& grads = params.grads();
  for (const ParameterEntry& e : params.entries()) {
    double ss = 0;
    for (size_t j = e.offset; j < e.offset + e.size; ++j) ss += double(grads[j]) * double(grads[j]);
    out.tensor_grad_norms.emplace_back(e.name, std::sqrt(ss) * unclip);
    if (const size_t bad = non_finite_gradients(params, e)) out.non_finite[e.name] = int64_t(bad);
  }
  return out;
}

json steps_to_json(const std::vector<ReplayedStep>& steps) {
  json out = json::array();
  for (const ReplayedStep& s : steps) {
    json tensors = json::object();
    for (const auto& [name, norm] : s.tensor_grad_norms) tensors[name] = finite_or_null(norm);
    out.push_back(json{{"step", s.step},
                       {"loss", finite_or_null(s.loss)},
                       {"grad_norm", finite_or_null(s.grad_norm)},
                       {"lr", s.lr},
                       {"tensor_grad_norms", tensors},
                       {"non_finite_gradients", s.non_finite}});
  }
  return out;
}

}  // namespace

Replay replay_training(const RunConfig& c, const Task& task, const std::string& checkpoint, int64_t steps,
                       int64_t repeats, const std::optional<AttentionCallRecording>& recording) {
  std::unique_ptr<TrainingBackend> backend =
      make_training_backend(c.model_for(task), c.training_setup(), c.backend_options());
  const LoadedCheckpoint loaded = load_checkpoint(checkpoint);
  const OptimizerState optimizer = load_optimizer_state(checkpoint, loaded.model->params());
  const auto restore = [&] {
    try {
      backend->upload_parameters(loaded.model->params());
    } catch (const Error& e) {
      throw Error(fmt::format("{}: its tensors do not fit the run's model ({})", checkpoint, e.what()));
    }
    backend->upload_optimizer_state(optimizer);
  };
  restore();
  Replay replay{backend->steps(), backend->device_description(), {}, {}, std::nullopt, 0};
  std::vector<TokenBatch> batches;  // [steps], drawn once for every pass
  for (int64_t k = 0; k < steps; ++k) batches.push_back(training_batch(task, c, replay.checkpoint_step + k));
  for (int64_t pass = 0; pass < repeats; ++pass) {
    if (pass > 0) restore();
    std::vector<ReplayedStep>& out = pass == 0 ? replay.steps : replay.repeats.emplace_back();
    for (int64_t k = 0; k < steps; ++k) {
      const TrainStep r = backend->step(batches[size_t(k)]);
      if (recording && pass == 0 && !replay.recorded_call && !(r.grad_norm <= recording->above)) {
        replay.recorded_call = backend->record_attention_call(recording->layer);
        replay.recorded_step = replay.checkpoint_step + k + 1;
      }
      out.push_back(describe_step(replay.checkpoint_step + k + 1, r, backend->download_parameters(),
                                  c.optimizer.clip_norm));
    }
  }
  return replay;
}

json replay_to_json(const Replay& replay) {
  json doc{{"checkpoint_step", replay.checkpoint_step}, {"device", replay.device}, {"steps", steps_to_json(replay.steps)}};
  if (!replay.repeats.empty()) {
    doc["repeats"] = json::array();
    for (const auto& pass : replay.repeats) doc["repeats"].push_back(steps_to_json(pass));
  }
  return doc;
}

}  // namespace pathbench
