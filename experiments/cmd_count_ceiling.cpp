// `pathbench count-ceiling TASK [--lengths L ...]`: for a decision-mode word problem, the best
// accuracy a classifier gets from the letter counts of a word alone (its order ignored), per length,
// so that a model's accuracy can be read against what counting already gives.
#include <fmt/format.h>

#include <map>
#include <optional>
#include <set>

#include "core/error.h"
#include "experiments/commands.h"
#include "experiments/task_argument.h"
#include "tasks/decision_count_ceiling.h"
#include "tasks/split_config.h"
#include "tasks/task_list.h"
#include "tasks/word_generators.h"

namespace pathbench {

namespace {

struct CountCeilingOptions {
  std::string config;
  std::vector<int64_t> lengths;  // empty: every length of the task's evaluation splits
};

void run_count_ceiling(const CountCeilingOptions& o) {
  std::string where;
  const json config = load_task_config(o.config, "count-ceiling task", where);
  make_task(config, where);  // validates every option
  const std::string name = config["name"];
  if (name != "word_problem")
    throw Error(fmt::format("{}: count-ceiling takes a word_problem task in decision mode, not task '{}'", where, name));
  json given = config;
  given.erase("name");
  const json options = resolve_options(word_problem_task().options, given, where);
  if (options["mode"] != "decision")
    throw Error(fmt::format("{}: count-ceiling takes a word_problem task in decision mode, not mode \"{}\"", where,
                            options["mode"].get<std::string>()));
  const FiniteGroup group = FiniteGroup::from_name(options["group"], where);
  const std::vector<int> generators = parse_word_generators(group, options["generators"], where);
  const bool balanced = options["balanced"];
  std::set<int64_t> lengths(o.lengths.begin(), o.lengths.end());
  if (lengths.empty())
    for (const auto& [split, split_lengths] : options["eval_splits"].items())
      for (const auto& length : split_lengths) lengths.insert(length.get<int64_t>());

  // Longest first: a length asked for with --lengths that is beyond the computation's limits fails
  // before any work and prints no table; of the split lengths, those beyond the limits are marked.
  std::map<int64_t, std::optional<double>> accuracies;
  std::string beyond;
  for (auto length = lengths.rbegin(); length != lengths.rend(); ++length) {
    try {
      accuracies[*length] = count_only_decision_accuracy(group, generators, *length, balanced);
    } catch (const Error& e) {
      if (!o.lengths.empty()) throw;
      accuracies[*length] = std::nullopt;
      if (beyond.empty()) beyond = e.what();
    }
  }
  const auto named = options["generators"].get<std::vector<std::string>>();
  fmt::print("word_problem {}, generators {}, {}: the best accuracy from the letter counts alone (Bayes-optimal, "
             "order ignored)\n\n| length | count-only accuracy |\n|---|---|\n",
             group.name(),
             named.empty() ? fmt::format("every element ({})", group.order()) : fmt::format("{}", fmt::join(named, ", ")),
             balanced ? "balanced" : "unbalanced (uniform words)");
  for (const auto& [length, accuracy] : accuracies)
    fmt::print("| {} | {} |\n", length, accuracy ? fmt::format("{:.3g}%", 100 * *accuracy) : "—");
  if (!beyond.empty()) fmt::print("\n—: beyond what this computation takes; the longest such: {}\n", beyond);
}

}  // namespace

void add_count_ceiling_command(CLI::App& app) {
  auto o = std::make_shared<CountCeilingOptions>();
  CLI::App* cmd = app.add_subcommand(
      "count-ceiling", "decision word problems: the best accuracy from letter counts alone (order ignored), per length");
  cmd->add_option("task", o->config, "task config: JSON ({\"name\": \"word_problem\", ...}) or a file holding it")
      ->required();
  cmd->add_option("--lengths", o->lengths, "word lengths (default: every length of the task's evaluation splits, those beyond the computation's limits "
                 "marked —)")
      ->check(CLI::Range(int64_t(1), kMaxTaskLength));
  cmd->callback([o]() { run_count_ceiling(*o); });
}

}  // namespace pathbench
