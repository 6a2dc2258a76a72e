// Result files: one JSON document per run (<id>-<hash>.json, written atomically) with a JSONL
// training curve beside it (<id>-<hash>.curve.jsonl). A run whose result says "done" is skipped
// by later invocations; half-written temporary files are never read.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "experiments/run_plan.h"
#include "experiments/train_run.h"

namespace pathbench {

inline constexpr int kResultFormat = 1;  // the value of "pathbench_result" in every result document

struct RunFiles {
  std::string result;      // <dir>/<id>-<hash>.json
  std::string curve;       // <dir>/<id>-<hash>.curve.jsonl
  std::string checkpoint;  // <dir>/<id>-<hash>.ckpt.safetensors
  std::string spike_checkpoint;  // <dir>/<id>-<hash>.spike.safetensors (training.spike_grad_norm)
  std::string model;             // <dir>/<id>-<hash>.model.safetensors (training.save_model)
};
RunFiles run_files(const std::string& dir, const PlannedRun& run);

// Where and when a run happened.
struct RunContext {
  std::string config_file;
  std::string start, end;      // UTC, ISO 8601
  double wall_seconds = 0;
  int64_t threads = 0;         // threads actually used
  json git;
};

// Whether a JSON document is a run's result (it carries the "pathbench_result" format key).
bool is_result_document(const json& doc);

// The result document.
json make_result(const PlannedRun& run, const RunOutcome& outcome, const Task* task, const RunContext& context);

// Every result document under `dir` (recursively), each with its path under "path"; files that are
// not result documents (other JSON, temporary files) are left out. Sorted by path. Files named like
// results that cannot be used (invalid JSON, a result missing a key or with one of the wrong type)
// are left out too, and listed in `unreadable` ("'path': reason") when it is given.
std::vector<json> load_results(const std::string& dir, std::vector<std::string>* unreadable = nullptr);

// The status of the result document at `path` ("" when there is none or it is unreadable).
std::string result_status(const std::string& path);

// hash → status of the result documents directly in `dir`.
std::map<std::string, std::string> result_status_by_hash(const std::string& dir);

}  // namespace pathbench
