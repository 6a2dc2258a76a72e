// The task interface. A task hands out token sequences and scores predictions; it knows nothing of
// tensors or devices. Every example is a pure function of (task config, split, seed, index)
// through the counter-based RNG (core/rng.h), so data needs no files and is identical everywhere.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/options.h"

namespace pathbench {

// One sequence. All vectors have the same length L.
struct Example {
  std::vector<int32_t> tokens;      // [L] model input
  std::vector<int32_t> targets;     // [L] next-token target at each position
  std::vector<uint8_t> loss_mask;   // [L] 1 where the training loss counts
  std::vector<uint8_t> score_mask;  // [L] 1 where the metrics score a prediction
  int64_t group = 0;                // the value metrics are broken down by (length, book size, …)
};

// Token ids and their printable forms.
struct Vocabulary {
  std::vector<std::string> symbols;  // symbols[id]
  std::string separator = " ";       // between tokens in text ("" for character-level tasks)
  int64_t size() const { return int64_t(symbols.size()); }
  // The tokens as text, joined by `separator`.
  std::string render(const std::vector<int32_t>& tokens) const { return render(tokens, separator); }
  std::string render(const std::vector<int32_t>& tokens, const std::string& separator) const;
};

// Collects the model's predictions over a split's examples and reports its metrics.
class MetricAccumulator {
 public:
  virtual ~MetricAccumulator() = default;
  // predictions: [L] the model's argmax at every position of `example`.
  virtual void add(const Example& example, const std::vector<int32_t>& predictions) = 0;
  // e.g. {"sequence_accuracy": 0.9, "scored": 12800, "per_length": {"64": {...}, ...}}: a breakdown by
  // Example::group sits under a key starting with "per_" (per_length, per_book_size).
  virtual json result() const = 0;
};

class Task {
 public:
  virtual ~Task() = default;
  virtual const Vocabulary& vocabulary() const = 0;
  // Names of the evaluation splits (the training split is "train").
  virtual std::vector<std::string> eval_splits() const = 0;
  // The example `index` of `split` ("train" or an eval split) under `seed`.
  virtual Example example(const std::string& split, uint64_t seed, uint64_t index) const = 0;
  virtual std::unique_ptr<MetricAccumulator> metrics(const std::string& split) const = 0;
  // The metric that tables show by default, a key of MetricAccumulator::result(), and whether
  // higher is better.
  virtual std::string primary_metric() const = 0;
  virtual bool higher_is_better() const = 0;
  // The draw_function_id (holdout.h) its held-out draws are remembered under; 0: not remembered.
  virtual uint64_t draw_function() const { return 0; }
};

struct TaskInfo {
  std::string name;
  std::string description;
  std::vector<OptionSpec> options;
  // Receives options resolved against `options`; throws pathbench::Error (naming `where` and the key)
  // for combinations the specs cannot express.
  std::function<std::unique_ptr<Task>(const json& options, const std::string& where)> make;
};

const std::vector<TaskInfo>& task_registry();
// config: {"name": "...", ...options}. Errors name `where` and the offending key and value.
std::unique_ptr<Task> make_task(const json& config, const std::string& where);

}  // namespace pathbench
