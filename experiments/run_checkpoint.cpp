// Run checkpoints: model + optimizer through experiments/checkpoint.h, runner progress as JSON
// metadata (doubles round-trip exactly through JSON, so a resumed run continues bit-identically).
#include "experiments/run_checkpoint.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "experiments/checkpoint.h"

namespace pathbench {

namespace {

// What a run's checkpoint and its final model both carry: the run (its hash), its task and its config.
std::map<std::string, std::string> run_metadata(const RunConfig& run) {
  return {{"run_hash", run.hash()}, {"task", run.task.dump()}, {"run_config", run.doc.dump()}};
}

}  // namespace

void save_run_checkpoint(const std::string& path, const RunConfig& run, const ModelConfig& model,
                         TrainingBackend& backend, const RunProgress& p) {
  const json state{{"step", p.step},
                   {"train_tokens", p.train_tokens},
                   {"train_seconds", p.train_seconds},
                   {"eval_seconds", p.eval_seconds},
                   {"last_logged_loss", finite_or_null(p.last_logged_loss)},
                   {"window",
                    {{"steps", p.window.steps},
                     {"loss", p.window.loss},
                     {"grad_norm", p.window.grad_norm},
                     {"grad_norm_max", p.window.grad_norm_max},
                     {"tokens", p.window.tokens},
                     {"seconds", p.window.seconds}}},
                   {"metrics", p.metrics}};
  const OptimizerState optimizer = backend.download_optimizer_state();
  std::map<std::string, std::string> metadata = run_metadata(run);
  metadata["run_progress"] = state.dump();
  save_checkpoint(path, model, backend.download_parameters(), &optimizer, metadata);
}

void save_run_model(const std::string& path, const RunConfig& run, const ModelConfig& model, TrainingBackend& backend) {
  save_checkpoint(path, model, backend.download_parameters(), nullptr, run_metadata(run));
}

json checkpoint_run_config(const std::string& path) {
  const LoadedCheckpoint loaded = load_checkpoint(path);
  const auto it = loaded.metadata.find("run_config");
  const json doc = it == loaded.metadata.end() ? json() : json::parse(it->second, nullptr, false);
  if (!doc.is_object())
    throw Error(fmt::format("{}: holds no run config (written by an older pathbench); give the run's config or "
                            "result file with --config",
                            path));
  return doc;
}

std::optional<RunProgress> load_run_checkpoint(const std::string& path, const std::string& run_hash,
                                               TrainingBackend& backend) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  LoadedCheckpoint loaded = load_checkpoint(path);
  const auto hash = loaded.metadata.find("run_hash");
  const auto progress = loaded.metadata.find("run_progress");
  if (hash == loaded.metadata.end() || hash->second != run_hash || progress == loaded.metadata.end())
    return std::nullopt;
  backend.upload_parameters(loaded.model->params());
  backend.upload_optimizer_state(load_optimizer_state(path, loaded.model->params()));
  const json s = json::parse(progress->second, nullptr, false);
  if (s.is_discarded() || !s.is_object())
    throw Error(fmt::format("{}: metadata 'run_progress' is not a JSON object", path));
  try {
    RunProgress p;
    p.step = s.at("step");
    p.train_tokens = s.at("train_tokens");
    p.train_seconds = s.at("train_seconds");
    p.eval_seconds = s.at("eval_seconds");
    p.last_logged_loss = s.at("last_logged_loss").is_number() ? s["last_logged_loss"].get<double>() : std::nan("");
    const json& w = s.at("window");
    p.window = CurveWindow{w.at("steps"), w.at("loss"), w.at("grad_norm"), w.at("tokens"), w.at("seconds"),
                           w.value("grad_norm_max", 0.0)};  // (checkpoints from before it was kept lack it)
    p.metrics = s.at("metrics");
    if (p.step != backend.steps())
      throw Error(fmt::format("{}: runner step {} differs from the optimizer's step {}", path, p.step,
                              backend.steps()));
    return p;
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: metadata 'run_progress' is incomplete ({})", path, e.what()));
  }
}

}  // namespace pathbench
