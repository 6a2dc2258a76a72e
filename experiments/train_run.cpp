// train_run: the training loop of one run, its curve and its failure handling.
#include "experiments/train_run.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <fstream>

#include "core/error.h"
#include "core/optim/trainer.h"
#include "experiments/evaluate.h"
#include "tasks/collate.h"

namespace pathbench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Running means of one logging window.
struct Window {
  int64_t steps = 0;
  double loss = 0, grad_norm = 0, tokens = 0, seconds = 0;
};

class CurveWriter {
 public:
  explicit CurveWriter(const std::string& path) : path_(path), out_(path, std::ios::trunc) {
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

TokenBatch training_batch(const Task& task, const RunConfig& c, int64_t step) {
  std::vector<Example> examples;
  examples.reserve(c.training.batch_size);
  for (int64_t i = 0; i < c.training.batch_size; ++i)
    examples.push_back(task.example("train", uint64_t(c.seed), uint64_t(step * c.training.batch_size + i)));
  return collate(examples);
}

json eval_curve_line(int64_t step, const json& metrics) {
  json evals = json::object();
  for (const auto& [split, m] : metrics.items()) evals[split] = without_breakdowns(m);
  return json{{"step", step}, {"eval", evals}};
}

}  // namespace

void check_training_device(const std::string& device) {
  if (device == "cpu") return;
  throw Error(fmt::format("device '{}': this build cannot train on it (use --device cpu)", device));
}

RunOutcome train_run(const RunConfig& c, const Task& task, const std::string& curve_path, RunObserver& observer) {
  RunOutcome out;
  int64_t step = 0;      // completed steps
  int64_t at_step = 0;   // the step a failure is reported at: the one in progress, or the last one before an evaluation
  try {
    check_training_device(c.device);
    ModelConfig mc = c.model;
    if (mc.vocab_size == 0) mc.vocab_size = task.vocabulary().size();
    Transformer<float> model(mc);
    model.init_parameters(uint64_t(c.seed));
    out.parameters = int64_t(model.params().count());
    Trainer<float> trainer(model, c.optimizer.adamw, c.lr_schedule(), c.optimizer.clip_norm);
    CurveWriter curve(curve_path);

    auto run_eval = [&]() {
      at_step = step;
      const auto t0 = Clock::now();
      out.metrics = evaluate(model, task, c.training);
      out.eval_seconds += seconds_since(t0);
      curve.write(eval_curve_line(step, out.metrics));
    };

    Window window;
    const auto train_start = Clock::now();
    while (step < c.training.steps) {
      at_step = step + 1;
      const auto t0 = Clock::now();
      const TokenBatch batch = training_batch(task, c, step);
      const TrainStep r = trainer.step(batch);
      const double seconds = seconds_since(t0);
      if (!std::isfinite(r.loss) || !std::isfinite(r.grad_norm)) {
        out.status = "nan";
        out.failure_step = at_step;
        out.failure_reason = fmt::format("non-finite {} at step {} (loss {}, gradient norm {})",
                                         std::isfinite(r.loss) ? "gradient norm" : "loss", at_step, r.loss,
                                         r.grad_norm);
        break;
      }
      ++step;
      const double tokens = double(batch.batch * batch.length);
      out.train_tokens += tokens;
      out.train_seconds += seconds;
      window.steps += 1;
      window.loss += r.loss;
      window.grad_norm += r.grad_norm;
      window.tokens += tokens;
      window.seconds += seconds;
      observer.on_step(step, c.training.steps, r.loss, tokens / std::max(seconds, 1e-9));
      if (step % c.training.log_every == 0 || step == c.training.steps) {
        out.final_loss = window.loss / double(window.steps);
        curve.write(json{{"step", step},
                         {"loss", out.final_loss},
                         {"grad_norm", window.grad_norm / double(window.steps)},
                         {"lr", r.lr},
                         {"tokens_per_s", window.tokens / std::max(window.seconds, 1e-9)},
                         {"elapsed_s", seconds_since(train_start)}});
        window = Window{};
      }
      if (step == c.training.steps || (c.training.eval_every > 0 && step % c.training.eval_every == 0)) run_eval();
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
  out.steps_done = step;
  return out;
}

}  // namespace pathbench
