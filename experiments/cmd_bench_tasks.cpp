// `pathbench bench-tasks`: generation speed of every task (examples/s and tokens/s at its default,
// paper-sized config, on one thread) and the cost of generating and collating one batch of 16
// examples at T ≈ 256 as a share of a CPU training step of the standard model; prints a table and
// writes JSON.
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "build_info.h"
#include "core/device.h"
#include "experiments/cli_checks.h"
#include "experiments/commands.h"
#include "experiments/file_output.h"
#include "experiments/run_metadata.h"
#include "experiments/step_timing.h"
#include "tasks/collate.h"
#include "tasks/task.h"

namespace pathbench {

namespace {

struct BenchTasksOptions {
  double seconds = 0.5;  // per measurement
  int warmup = 1, steps = 3, threads = 0;
  std::string encoding = "rope";
  std::string out = "bench-tasks.json";
};

// Task options giving sequences of about 256 tokens (the standard training step's T).
const std::map<std::string, json>& configs_at_256() {
  static const std::map<std::string, json> configs = {
      {"flipflop", {{"length", 256}}},
      {"word_problem", {{"train_min_length", 256}, {"train_max_length", 256}}},
      {"phonebook", {{"train_min_entries", 18}, {"train_max_entries", 18}}},  // 18 lines of 13 + a query of 13
      {"mqrar", {{"length", 256}}},
  };
  return configs;
}

struct Rate {
  double examples_per_s = 0, tokens_per_s = 0, mean_tokens = 0, ms_per_call = 0;
};

// Calls make_batch (which returns the examples it made and their tokens) until `seconds` pass.
template <typename MakeBatch>
Rate measure(double seconds, MakeBatch make_batch) {
  using clock = std::chrono::steady_clock;
  int64_t calls = 0, examples = 0, tokens = 0;
  const auto start = clock::now();
  double elapsed = 0;
  do {
    auto [n, t] = make_batch(calls);
    examples += n;
    tokens += t;
    ++calls;
    elapsed = std::chrono::duration<double>(clock::now() - start).count();
  } while (elapsed < seconds);
  return {double(examples) / elapsed, double(tokens) / elapsed, double(tokens) / double(examples),
          1000.0 * elapsed / double(calls)};
}

// Draws examples 0, 1, 2, … of `split`, or with `cycle` > 0 examples 0 … cycle − 1 over and over (an
// evaluation drawn again: its held-out examples come from their remembered starts).
Rate measure_split(const Task& task, const std::string& split, double seconds, int64_t cycle = 0) {
  return measure(seconds, [&](int64_t call) {
    const Example e = task.example(split, 1, uint64_t(cycle > 0 ? call % cycle : call));
    return std::pair<int64_t, int64_t>{1, int64_t(e.tokens.size())};
  });
}

void run_bench_tasks(const BenchTasksOptions& o) {
  if (o.threads > 0) omp_set_num_threads(o.threads);
  const json git = source_git_state();  // before timing: a bad PATHBENCH_GIT_COMMIT fails at once
  const StepBenchShape shape;
  fmt::print("pathbench bench-tasks: generation on 1 thread; training step of the standard model ({} layers, width {}, "
             "{} heads, {}, T {}, batch {}) on {} threads\n\n",
             shape.layers, shape.width, shape.heads, o.encoding, shape.length, shape.batch, omp_get_max_threads());
  const StepTiming step = time_training_steps(shape, o.encoding, o.warmup, o.steps);

  fmt::print("| task | tokens/example | train examples/s | train tokens/s | eval examples/s | eval again examples/s "
             "| batch of {} at T≈{} (ms) | share of a {:.0f} ms step |\n|---|---|---|---|---|---|---|---|\n",
             shape.batch, shape.length, step.median_ms);
  json results = json::array();
  for (const TaskInfo& info : task_registry()) {
    const auto task = make_task(json{{"name", info.name}}, "bench-tasks " + info.name);
    const std::string eval_split = task->eval_splits().front();
    const Rate train = measure_split(*task, "train", o.seconds);
    const Rate eval = measure_split(*task, eval_split, o.seconds);
    const Rate eval_again =
        measure_split(*task, eval_split, o.seconds, std::max<int64_t>(1, int64_t(eval.examples_per_s * o.seconds)));

    json small = json{{"name", info.name}};
    if (configs_at_256().count(info.name)) small.update(configs_at_256().at(info.name));
    const auto task_256 = make_task(small, "bench-tasks " + info.name + " at T=256");
    const Rate batch = measure(o.seconds, [&](int64_t call) {
      std::vector<Example> examples;
      for (int64_t i = 0; i < shape.batch; ++i) examples.push_back(task_256->example("train", 2, uint64_t(call * shape.batch + i)));
      const TokenBatch b = collate(examples);
      return std::pair<int64_t, int64_t>{b.batch, b.batch * b.length};
    });
    const double share = batch.ms_per_call / step.median_ms;
    fmt::print("| {} | {:.0f} | {:.0f} | {:.3g} | {:.0f} | {:.0f} | {:.3f} (T {:.0f}) | {:.3f}% |\n", info.name,
               train.mean_tokens, train.examples_per_s, train.tokens_per_s, eval.examples_per_s,
               eval_again.examples_per_s, batch.ms_per_call, batch.mean_tokens, 100.0 * share);
    std::fflush(stdout);
    results.push_back({{"task", info.name},
                       {"config", json{{"name", info.name}}},
                       {"mean_tokens_per_example", train.mean_tokens},
                       {"train_examples_per_s", train.examples_per_s},
                       {"train_tokens_per_s", train.tokens_per_s},
                       {"eval_split", eval_split},
                       {"eval_examples_per_s", eval.examples_per_s},
                       {"eval_again_examples_per_s", eval_again.examples_per_s},
                       {"batch_config", small},
                       {"batch_mean_tokens", batch.mean_tokens},
                       {"batch_ms", batch.ms_per_call},
                       {"batch_share_of_step", share}});
  }
  json doc{{"cpu", cpu_description()},
           {"generation_threads", 1},
           {"step_threads", omp_get_max_threads()},
           {"build_flags", PATHBENCH_BUILD_FLAGS},
           {"git", git},
           {"step", {{"encoding", o.encoding}, {"layers", shape.layers}, {"width", shape.width}, {"heads", shape.heads},
                     {"length", shape.length}, {"batch", shape.batch}, {"ms_median", step.median_ms},
                     {"timed_steps", o.steps}}},
           {"seconds_per_measurement", o.seconds},
           {"results", results}};
  write_file_atomically(o.out, doc.dump(2) + "\n");
  fmt::print("wrote {}\n", o.out);
}

}  // namespace

void add_bench_tasks_command(CLI::App& app) {
  auto opts = std::make_shared<BenchTasksOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench-tasks", "time example generation per task and its share of a CPU training step; write JSON");
  cmd->add_option("--seconds", opts->seconds, "seconds per measurement")->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", opts->warmup, "untimed training steps")->check(integer_at_least(0));
  cmd->add_option("--steps", opts->steps, "timed training steps")->check(integer_at_least(1));
  cmd->add_option("--encoding", opts->encoding, "position encoding of the timed model");
  cmd->add_option("--threads", opts->threads, "CPU threads of the training step (default: OpenMP's default)")
      ->check(integer_at_least(0));
  cmd->add_option("--out", opts->out, "JSON output file");
  cmd->callback([opts]() { run_bench_tasks(*opts); });
}

}  // namespace pathbench
