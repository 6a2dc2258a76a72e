// Result documents: paths, assembly, and reading a results folder back.
#include "experiments/result_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "build_info.h"
#include "core/error.h"
#include "experiments/file_output.h"
#include "experiments/run_metadata.h"

namespace pathbench {

namespace fs = std::filesystem;

bool is_result_document(const json& doc) { return doc.is_object() && doc.contains("pathbench_result"); }

namespace {

// A result document's JSON, or null when the file is unreadable or not a result.
json read_result_document(const fs::path& path) {
  json doc = json::parse(read_file(path.string()), nullptr, false);
  if (doc.is_discarded() || !is_result_document(doc)) return json();
  doc["path"] = path.string();
  return doc;
}

// Why a parsed file named like a result cannot be used as one: "" when it is a well-formed result
// document or plainly another kind of JSON (no "pathbench_result" key).
std::string unusable_reason(const json& doc) {
  if (doc.is_discarded()) return "not valid JSON (truncated or corrupted?)";
  if (!is_result_document(doc)) return "";
  for (const std::string key : {"status", "id", "hash", "config", "metrics"}) {
    const json& value = doc.contains(key) ? doc[key] : json();
    const bool object_key = key == "config" || key == "metrics";
    if (object_key ? !value.is_object() : !value.is_string())
      return fmt::format("key '{}' is {} (expected {})", key, value.is_null() ? "missing" : "of type " + std::string(value.type_name()),
                         object_key ? "an object" : "a string");
  }
  return "";
}

bool is_result_name(const fs::path& path) {
  const std::string name = path.filename().string();
  return name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0;
}

}  // namespace

RunFiles run_files(const std::string& dir, const PlannedRun& run) {
  const std::string stem = (fs::path(dir) / run.file_stem()).string();
  return RunFiles{stem + ".json", stem + ".curve.jsonl", stem + ".ckpt.safetensors", stem + ".spike.safetensors",
                  stem + ".model.safetensors"};
}

json make_result(const PlannedRun& run, const RunOutcome& outcome, const Task* task, const RunContext& context) {
  const RunConfig& c = run.config;
  json failure = nullptr;
  if (outcome.status != "done") failure = json{{"reason", outcome.failure_reason}, {"step", outcome.failure_step}};
  json doc{{"pathbench_result", kResultFormat},
           {"id", run.id},
           {"hash", run.hash},
           {"status", outcome.status},
           {"failure", failure},
           {"config_file", context.config_file},
           {"axes", run.axes},
           {"config", c.semantic_json()},
           {"seed", c.seed},
           {"device", c.device},
           {"precision", c.precision},
           {"device_name", outcome.device_name},
           {"threads", context.threads},
           {"git", context.git},
           {"build", build_description()},
           {"start", context.start},
           {"end", context.end},
           {"wall_time_s", context.wall_seconds},
           {"train_time_s", outcome.train_seconds},
           {"eval_time_s", outcome.eval_seconds},
           {"steps_done", outcome.steps_done},
           {"resumed_from_step", outcome.resumed_from},
           {"stopped_early_at_step", outcome.stopped_early_at > 0 ? json(outcome.stopped_early_at) : json(nullptr)},
           {"train_tokens", outcome.train_tokens},
           {"tokens_per_s", outcome.train_seconds > 0 ? json(outcome.train_tokens / outcome.train_seconds) : json(nullptr)},
           {"parameters", outcome.parameters},
           {"final_train_loss", finite_or_null(outcome.final_loss)},
           {"metrics", outcome.metrics},
           {"curve", fs::path(run_files("", run).curve).filename().string()}};
  if (c.training.save_model && outcome.status == "done")
    doc["model"] = fs::path(run_files("", run).model).filename().string();  // for `pathbench generate`
  if (task) {
    doc["eval_splits"] = task->eval_splits();
    doc["primary_metric"] = task->primary_metric();
    doc["higher_is_better"] = task->higher_is_better();
  }
  return doc;
}

std::vector<json> load_results(const std::string& dir, std::vector<std::string>* unreadable) {
  std::vector<fs::path> paths;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file() && is_result_name(it->path())) paths.push_back(it->path());
  std::sort(paths.begin(), paths.end());
  std::vector<json> docs;
  for (const auto& p : paths) {
    json doc = json::parse(read_file(p.string()), nullptr, false);
    const std::string reason = unusable_reason(doc);
    if (!reason.empty()) {
      if (unreadable) unreadable->push_back(fmt::format("'{}': {}", p.string(), reason));
      continue;
    }
    if (!is_result_document(doc)) continue;
    doc["path"] = p.string();
    docs.push_back(std::move(doc));
  }
  return docs;
}

std::string result_status(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return "";
  try {
    const json doc = read_result_document(path);
    return !doc.is_null() && doc["status"].is_string() ? doc["status"].get<std::string>() : "";
  } catch (const Error&) {  // removed between the two looks
    return "";
  }
}

std::map<std::string, std::string> result_status_by_hash(const std::string& dir) {
  std::map<std::string, std::string> status;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file() || !is_result_name(it->path())) continue;
    const json doc = read_result_document(it->path());
    if (doc.is_null() || !doc["hash"].is_string() || !doc["status"].is_string()) continue;
    std::string& s = status[doc["hash"].get<std::string>()];
    if (s != "done") s = doc["status"];
  }
  return status;
}

}  // namespace pathbench
