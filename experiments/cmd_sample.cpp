// `pathbench sample '<task config JSON or file>'`: prints a few examples of a task as text, each
// scored target shown as [→target] right after the input token that predicts it.
#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "experiments/cli_checks.h"
#include "experiments/commands.h"
#include "experiments/task_argument.h"
#include "tasks/split_config.h"
#include "tasks/task.h"

namespace pathbench {

namespace {

struct SampleOptions {
  std::string config;
  std::string split = "train";
  int64_t count = 3;
  int64_t seed = 0;
};

std::string render_example(const Vocabulary& vocabulary, const Example& e) {
  std::string out;
  for (size_t t = 0; t < e.tokens.size(); ++t) {
    if (t) out += vocabulary.separator;
    out += vocabulary.render({e.tokens[t]});
    if (e.score_mask[t]) out += "[→" + vocabulary.render({e.targets[t]}) + "]";
  }
  return out;
}

void run_sample(const SampleOptions& o) {
  std::string where;
  const json config = load_task_config(o.config, "sample config", where);
  const std::unique_ptr<Task> task = make_task(config, where);
  check_split(config["name"].get<std::string>(), o.split, task->eval_splits());
  const Vocabulary& vocabulary = task->vocabulary();
  fmt::print("task {}: {} symbols; splits: train, {}\n", config["name"].get<std::string>(), vocabulary.size(),
             fmt::join(task->eval_splits(), ", "));
  std::string symbols;
  for (const auto& s : vocabulary.symbols) symbols += (symbols.empty() ? "" : " ") + json(s).dump();
  fmt::print("symbols: {}\nsplit {}, seed {}; scored targets are shown as [→target] after the token that predicts them\n",
             symbols, o.split, o.seed);
  for (int64_t i = 0; i < o.count; ++i) {
    const Example e = task->example(o.split, uint64_t(o.seed), uint64_t(i));
    const auto scored = std::count(e.score_mask.begin(), e.score_mask.end(), 1);
    const auto in_loss = std::count(e.loss_mask.begin(), e.loss_mask.end(), 1);
    fmt::print("\n#{} (group {}, {} tokens, {} scored, {} in the loss)\n{}\n", i, e.group, e.tokens.size(), scored,
               in_loss, render_example(vocabulary, e));
  }
}

}  // namespace

void add_sample_command(CLI::App& app) {
  auto opts = std::make_shared<SampleOptions>();
  CLI::App* cmd = app.add_subcommand("sample", "print a few examples of a task as text, targets marked");
  cmd->add_option("config", opts->config, "task config: JSON ({\"name\": \"flipflop\", ...}) or a file holding it")
      ->required();
  cmd->add_option("--split", opts->split, "split to draw from (train or an evaluation split)");
  cmd->add_option("--count", opts->count, "examples to print")->check(integer_at_least(1));
  cmd->add_option("--seed", opts->seed, "seed of the examples")->check(CLI::Range(int64_t(0), int64_t(9007199254740992)));
  cmd->callback([opts]() { run_sample(*opts); });
}

}  // namespace pathbench
