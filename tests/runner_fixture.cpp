// The runner tests' fixture task, tiny config and temporary folders.
#include "tests/runner_fixture.h"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/error.h"
#include "core/rng.h"
#include "experiments/commands.h"

namespace pathbench::testing {

namespace {

// The signal_at_parity_example setting (target 0: off).
struct ParitySignal {
  uint64_t seed = 0;
  int64_t index = -1;
  pid_t target = 0;
  int signal = 0;
} g_parity_signal;

class ParityMetrics : public MetricAccumulator {
 public:
  void add(const Example& e, const std::vector<int32_t>& predictions) override {
    for (size_t t = 0; t < predictions.size(); ++t) {
      if (!e.score_mask[t]) continue;
      const bool right = predictions[t] == e.targets[t];
      total_[0] += 1, total_[1] += right;
      groups_[e.group][0] += 1, groups_[e.group][1] += right;
    }
  }
  json result() const override {
    json out = format(total_);
    for (const auto& [length, counts] : groups_) out["per_length"][std::to_string(length)] = format(counts);
    return out;
  }

 private:
  static json format(const std::array<int64_t, 2>& c) {
    const double accuracy = double(c[1]) / double(c[0]);
    return json{{"accuracy", accuracy}, {"error_rate", 1.0 - accuracy}, {"scored", c[0]}};
  }
  std::array<int64_t, 2> total_{0, 0};  // scored, correct
  std::map<int64_t, std::array<int64_t, 2>> groups_;
};

class Parity : public Task {
 public:
  Parity(int64_t length, int64_t fail_at, int64_t kill_at) : length_(length), fail_at_(fail_at), kill_at_(kill_at) {
    vocabulary_.symbols = {"0", "1"};
  }
  const Vocabulary& vocabulary() const override { return vocabulary_; }
  std::vector<std::string> eval_splits() const override { return {"short", "long"}; }
  Example example(const std::string& split, uint64_t seed, uint64_t index) const override {
    if (split == "train" && fail_at_ >= 0 && int64_t(index) >= fail_at_)
      throw Error(fmt::format("parity: failing on purpose at example {}", index));
    if (split == "train" && kill_at_ >= 0 && int64_t(index) >= kill_at_) ::raise(SIGKILL);
    if (split == "train" && g_parity_signal.target != 0 && seed == g_parity_signal.seed &&
        int64_t(index) == g_parity_signal.index)
      ::kill(g_parity_signal.target, g_parity_signal.signal);
    const int64_t length = split == "long" ? 2 * length_ : length_;
    CounterRng rng(combine_key(combine_key(seed, hash_string(split)), index));
    Example e;
    int32_t parity = 0;
    for (int64_t t = 0; t < length; ++t) {
      const int32_t bit = int32_t(rng.below(2));
      parity ^= bit;
      e.tokens.push_back(bit);
      e.targets.push_back(parity);
    }
    e.loss_mask.assign(length, 1);
    e.score_mask.assign(length, 1);
    e.group = length;
    return e;
  }
  std::unique_ptr<MetricAccumulator> metrics(const std::string&) const override {
    return std::make_unique<ParityMetrics>();
  }
  std::string primary_metric() const override { return "error_rate"; }
  bool higher_is_better() const override { return false; }

 private:
  int64_t length_, fail_at_, kill_at_;
  Vocabulary vocabulary_;
};

}  // namespace

void signal_at_parity_example(uint64_t seed, int64_t index, pid_t target, int signal) {
  g_parity_signal = ParitySignal{seed, index, target, signal};
}

TaskProvider fixture_tasks() {
  TaskInfo info{"parity",
                "running parity of random bits (test fixture)",
                {{"length", OptionType::Int, 6, "training length", 1.0, 64.0},
                 {"fail_at_example", OptionType::Int, -1, "training example that throws; -1: never", -1.0},
                 {"kill_at_example", OptionType::Int, -1, "training example that kills the process; -1: never", -1.0}},
                [](const json& o, const std::string&) {
                  return std::make_unique<Parity>(o["length"].get<int64_t>(), o["fail_at_example"].get<int64_t>(),
                                                  o["kill_at_example"].get<int64_t>());
                }};
  return task_provider({info});
}

json tiny_run_config() {
  return json::parse(R"({
    "model": {"n_layers": 1, "d_model": 16, "n_heads": 2, "encoding": "rope"},
    "task": {"name": "parity", "length": 6},
    "optimizer": {"lr": 0.01},
    "schedule": {"warmup_steps": 2},
    "training": {"steps": 6, "batch_size": 4, "eval_every": 3, "eval_examples": 8, "eval_batch_size": 4, "log_every": 2},
    "seed": 0,
    "threads": 1
  })");
}

std::vector<json> curve_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  return lines;
}

std::vector<json> curve_values(const std::string& path) {
  std::vector<json> lines = curve_lines(path);
  for (json& l : lines) {
    l.erase("tokens_per_s");
    l.erase("elapsed_s");
  }
  return lines;
}

void cli(std::vector<std::string> args) {
  CLI::App app{"pathbench"};
  app.require_subcommand(1);
  add_commands(app);
  args.insert(args.begin(), "pathbench");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  app.parse(int(argv.size()), argv.data());
}

std::string fresh_temp_dir(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("pathbench-test-{}-{}", name, ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

}  // namespace pathbench::testing
