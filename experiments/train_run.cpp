// train_run: the training loop of one run, its curve, checkpoints and failure handling.
#include "experiments/train_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/optim/training_backend.h"
#include "core/params/non_finite.h"
#include "experiments/batch_prefetch.h"
#include "experiments/evaluate.h"
#include "experiments/file_output.h"
#include "experiments/run_checkpoint.h"
#include "experiments/stop_signal.h"
#include "tasks/collate.h"

namespace pathbench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Appends to a non-finite step's reason which tensors' gradients went non-finite. Best effort: a
// download that fails leaves the reason as it is and the run's status nan.
void add_gradient_diagnosis(TrainingBackend& backend, std::string& reason) {
  try {
    const std::string where = describe_non_finite_gradients(backend.download_parameters());
    if (!where.empty()) reason += "; " + where;
  } catch (const Error&) {
  }
}

// Appends lines to the curve file. Opening it keeps the lines of steps <= keep_through (a resumed
// checkpoint's step) and drops the rest.
class CurveWriter {
 public:
  CurveWriter(const std::string& path, int64_t keep_through) : path_(path) {
    std::string kept;
    if (keep_through > 0) {
      std::ifstream in(path);
      for (std::string line; std::getline(in, line);) {
        const json j = json::parse(line, nullptr, false);
        if (!j.is_discarded() && j.value("step", int64_t(0)) <= keep_through) kept += line + "\n";
      }
    }
    write_file_atomically(path, kept);
    out_.open(path, std::ios::app);
    if (!out_) throw Error(fmt::format("cannot write '{}'", path));
  }
  void write(const json& line) {
    out_ << line.dump() << '\n';
    out_.flush();
    if (!out_) throw Error(fmt::format("cannot write '{}'", path_));
  }

 private:
  std::string path_;
  std::ofstream out_;
};

// Keeps a copy of the latest checkpoint (taken after `checkpoint_step`) the first time a step's
// gradient norm exceeds training.spike_grad_norm or is non-finite, so the steps to the spike can be
// replayed from it (experiments/replay.h); a curve line records it. A copy kept earlier (by this
// run before a resume) stays, as does the trap's state: it fires once per run.
class SpikeTrap {
 public:
  SpikeTrap(const TrainingConfig& t, const RunOutputs& outputs)
      : threshold_(t.spike_grad_norm), checkpoint_(outputs.checkpoint), copy_(outputs.spike_checkpoint),
        fired_(threshold_ <= 0 || copy_.empty() || std::filesystem::exists(copy_)) {}
  void saw(int64_t step, double grad_norm, int64_t checkpoint_step, CurveWriter& curve) {
    if (fired_ || checkpoint_step == 0 || (std::isfinite(grad_norm) && grad_norm <= threshold_)) return;
    write_file_atomically(copy_, read_file(checkpoint_));
    fired_ = true;
    curve.write(json{{"step", step},
                     {"spike",
                      {{"grad_norm", finite_or_null(grad_norm)},
                       {"checkpoint", std::filesystem::path(copy_).filename().string()},
                       {"checkpoint_step", checkpoint_step}}}});
  }

 private:
  double threshold_;
  std::string checkpoint_, copy_;
  bool fired_;
};

json eval_curve_line(int64_t step, const json& metrics) {
  json evals = json::object();
  for (const auto& [split, m] : metrics.items()) evals[split] = without_breakdowns(m);
  return json{{"step", step}, {"eval", evals}};
}

int64_t final_eval_examples(const TrainingConfig& t) {
  return t.final_eval_examples > 0 ? t.final_eval_examples : t.eval_examples;
}

json timed_evaluation(TrainingBackend& backend, const Task& task, const TrainingConfig& t, int64_t examples,
                      bool draw_ahead, const std::string& held_out_starts, RunProgress& p) {
  const auto e0 = Clock::now();
  json metrics = evaluate(backend, task, t, examples, draw_ahead, held_out_starts);
  p.eval_seconds += seconds_since(e0);
  return metrics;
}

}  // namespace

TokenBatch training_batch(const Task& task, const RunConfig& c, int64_t step) {
  const int64_t size = c.training.batch_size;
  return collate(draw_examples(task, "train", uint64_t(c.seed), step * size, size));
}

RunOutcome train_run(const RunConfig& c, const Task& task, const RunOutputs& outputs, RunObserver& observer) {
  RunOutcome out;
  RunProgress p;
  p.last_logged_loss = std::nan("");
  int64_t at_step = 0;  // the step a failure is reported at: the one in progress, or the last one before an evaluation
  try {
    const ModelConfig mc = c.model_for(task);
    std::unique_ptr<TrainingBackend> backend = make_training_backend(mc, c.training_setup(), c.backend_options());
    out.device_name = backend->device_description();
    out.parameters = int64_t(backend->download_parameters().parameter_count());
    const bool checkpoints = c.training.checkpoint_every > 0;
    if (checkpoints && outputs.resume)
      if (auto resumed = load_run_checkpoint(outputs.checkpoint, c.hash(), *backend)) {
        p = *resumed;
        out.resumed_from = p.step;
      }
    CurveWriter curve(outputs.curve, p.step);
    SpikeTrap spikes(c.training, outputs);
    int64_t checkpoint_step = p.step;  // of the checkpoint on disk (0: none yet)
    const int64_t steps = c.training.steps;
    // On a GPU the next step's batch is drawn, checked and planned (prepare_ahead) while the device
    // runs this one.
    const bool ahead = prefetch_enabled(parse_prefetch_mode(std::getenv("PATHBENCH_PREFETCH")), c.device);
    Prefetcher<TokenBatch> batches(
        [&](int64_t step) {
          TokenBatch batch = training_batch(task, c, step);
          backend->prepare_ahead(batch, true);
          return batch;
        },
        steps, ahead);

    while (p.step < steps) {
      at_step = p.step + 1;
      const auto t0 = Clock::now();
      const TokenBatch batch = batches.take(p.step);
      const TrainStep r = backend->step(batch);
      const double seconds = seconds_since(t0);
      spikes.saw(at_step, r.grad_norm, checkpoint_step, curve);
      if (!std::isfinite(r.loss) || !std::isfinite(r.grad_norm)) {
        out.status = "nan";
        out.failure_step = at_step;
        out.failure_reason = fmt::format("non-finite {} at step {} (loss {}, gradient norm {})",
                                         std::isfinite(r.loss) ? "gradient norm" : "loss", at_step, r.loss,
                                         r.grad_norm);
        add_gradient_diagnosis(*backend, out.failure_reason);
        break;
      }
      const int64_t step = ++p.step;
      const double tokens = double(batch.batch * batch.length);
      p.train_tokens += tokens;
      p.train_seconds += seconds;
      p.window.steps += 1;
      p.window.loss += r.loss;
      p.window.grad_norm += r.grad_norm;
      p.window.grad_norm_max = std::max(p.window.grad_norm_max, r.grad_norm);
      p.window.tokens += tokens;
      p.window.seconds += seconds;
      observer.on_step(step, steps, r.loss, tokens / std::max(seconds, 1e-9));
      if (step % c.training.log_every == 0 || step == steps) {
        p.last_logged_loss = p.window.loss / double(p.window.steps);
        curve.write(json{{"step", step},
                         {"loss", p.last_logged_loss},
                         {"grad_norm", p.window.grad_norm / double(p.window.steps)},
                         {"grad_norm_max", p.window.grad_norm_max},
                         {"lr", r.lr},
                         {"tokens_per_s", p.window.tokens / std::max(p.window.seconds, 1e-9)},
                         {"elapsed_s", p.train_seconds + p.eval_seconds}});
        p.window = CurveWindow{};
      }
      const bool periodic = c.training.eval_every > 0 && step % c.training.eval_every == 0;
      bool last = step == steps;
      if (periodic && !last) {
        at_step = step;
        p.metrics = timed_evaluation(*backend, task, c.training, c.training.eval_examples, ahead,
                                     outputs.held_out_starts, p);
        curve.write(eval_curve_line(step, p.metrics));
        last = !c.training.early_stop_split.empty() &&
               metric_reached(p.metrics, task, c.training.early_stop_split, c.training.early_stop_at);
        if (last) out.stopped_early_at = step;
      }
      if (last) {
        at_step = step;
        p.metrics = timed_evaluation(*backend, task, c.training, final_eval_examples(c.training), ahead,
                                     outputs.held_out_starts, p);
        curve.write(eval_curve_line(step, p.metrics));
        if (c.training.save_model && !outputs.model.empty()) save_run_model(outputs.model, c, mc, *backend);
      }
      // (not at an early stop: a resumed run then repeats the steps to it and stops there again)
      const bool saved = checkpoints && (step % c.training.checkpoint_every == 0 || step == steps);
      if (saved) {
        save_run_checkpoint(outputs.checkpoint, c, mc, *backend, p);
        checkpoint_step = step;
      }
      if (last) break;
      if (stop_requested()) {  // a signal asked the sweep to stop: keep this step, end as interrupted
        if (checkpoints && !saved) save_run_checkpoint(outputs.checkpoint, c, mc, *backend, p);
        out.status = "interrupted";
        out.failure_step = step;
        out.failure_reason = fmt::format("stopped by signal {} after step {}; {}", stop_signal(), step,
                                         checkpoints ? "it resumes there" : "no checkpoints, so it starts again");
        break;
      }
    }
  } catch (const Error& e) {
    out.status = "failed";
    out.failure_step = at_step;
    out.failure_reason = e.what();
  } catch (const std::exception& e) {
    out.status = "failed";
    out.failure_step = at_step;
    out.failure_reason = fmt::format("internal error: {}", e.what());
  }
  out.steps_done = p.step;
  out.train_tokens = p.train_tokens;
  out.train_seconds = p.train_seconds;
  out.eval_seconds = p.eval_seconds;
  out.final_loss = p.last_logged_loss;
  out.metrics = p.metrics;
  return out;
}

}  // namespace pathbench
