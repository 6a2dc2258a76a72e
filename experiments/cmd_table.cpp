// `pathbench table DIR [DIR ...]`: a markdown table over the result files in one or more folders
// (mean ± std across seeds, or each seed's value), or the fewest-layers-reaching-a-threshold table.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>

#include "core/error.h"
#include "experiments/commands.h"
#include "experiments/file_output.h"
#include "experiments/metrics_at_step.h"
#include "experiments/result_file.h"
#include "experiments/result_fields.h"
#include "experiments/results_table.h"
#include "experiments/sweep.h"

namespace pathbench {

namespace {

struct TableCommandOptions {
  std::vector<std::string> dirs;
  TableOptions table;
  std::vector<std::string> where;
  std::vector<int64_t> seeds;  // empty: every seed
  std::string out;
  int64_t at_step = 0;  // 0: final metrics
  std::optional<double> first_step;  // the threshold of --first-step
};

// The results under every folder, each file once (folders may overlap).
std::vector<json> results_in(const std::vector<std::string>& dirs, std::vector<std::string>& unreadable) {
  std::vector<json> results;
  std::set<std::filesystem::path> seen;
  for (const std::string& dir : dirs)
    for (json& doc : load_results(dir, &unreadable))
      if (seen.insert(std::filesystem::weakly_canonical(doc["path"].get<std::string>())).second)
        results.push_back(std::move(doc));
  return results;
}

void table_command(TableCommandOptions o) {
  for (const std::string& dir : o.dirs)
    if (!std::filesystem::is_directory(dir)) throw Error(fmt::format("'{}' is not a folder", dir));
  for (const auto& text : o.where) {
    const Override w = parse_override(text, "--where");
    o.table.where.emplace_back(w.key, w.value);
  }
  std::vector<std::string> unreadable;
  std::vector<json> results = results_in(o.dirs, unreadable);
  for (const std::string& file : unreadable) fmt::print(stderr, "pathbench: left out unreadable result {}\n", file);
  if (results.empty())
    throw Error(fmt::format("no result files (*.json with \"pathbench_result\") in '{}'", fmt::join(o.dirs, "', '")));
  std::vector<int64_t> absent_seeds;  // asked for by --seeds, in no result
  if (!o.seeds.empty()) {
    std::erase_if(results, [&](const json& r) {
      return !r.contains("seed") ||
             std::find(o.seeds.begin(), o.seeds.end(), r["seed"].get<int64_t>()) == o.seeds.end();
    });
    if (results.empty())
      throw Error(fmt::format("--seeds {}: no result of those seeds in '{}'", fmt::join(o.seeds, ","),
                              fmt::join(o.dirs, "', '")));
    for (int64_t seed : o.seeds)
      if (std::none_of(results.begin(), results.end(), [&](const json& r) { return r["seed"] == seed; }))
        absent_seeds.push_back(seed);
  }
  if (o.at_step > 0 && o.first_step) throw Error("--at-step and --first-step do not combine");
  if ((o.at_step > 0 || o.first_step) && is_run_metric(o.table.metric))
    throw Error(fmt::format("--metric {} is a field of the whole run, which the curve's evaluations do not hold "
                            "(--at-step and --first-step read them)",
                            o.table.metric));
  const int64_t interrupted_read = o.at_step > 0 ? use_metrics_at_step(results, o.at_step) : 0;
  std::string reached;  // what --first-step counts, for the note above the table
  if (o.first_step) {
    const std::set<std::string> used = use_first_step_reaching(results, o.table.metric, *o.first_step);
    for (const std::string& metric : used) check_fraction("--first-step", *o.first_step, metric);
    reached = fmt::format("{} reached {}", fmt::join(used, ", "), *o.first_step);
    o.table.metric = "first_step";
  }
  std::string table = results_table(results, o.table);
  if (o.at_step > 0)
    table = fmt::format("(the evaluation at step {}; runs that ended earlier keep their last{})\n", o.at_step,
                        interrupted_read > 0 ? fmt::format("; {} interrupted after it count", interrupted_read) : "") +
            table;
  if (o.first_step)
    table = fmt::format("(first_step: each run's first evaluation step at which {}; the means leave out runs that "
                        "never did, so a smaller n (· per seed, — where none did) marks them)\n",
                        reached) +
            table;
  if (!absent_seeds.empty())
    table = fmt::format("(--seeds: no result of seed{} {})\n", absent_seeds.size() == 1 ? "" : "s",
                        fmt::join(absent_seeds, ", ")) +
            table;
  if (!unreadable.empty())
    table = fmt::format("({} unreadable result file{} left out: see stderr)\n", unreadable.size(),
                        unreadable.size() == 1 ? "" : "s") + table;
  fmt::print("{}", table);
  if (!o.out.empty()) write_file_atomically(o.out, table);
}

}  // namespace

void add_table_command(CLI::App& app) {
  auto o = std::make_shared<TableCommandOptions>();
  CLI::App* cmd =
      app.add_subcommand("table", "markdown table over one or more folders of results: mean ± std across seeds");
  cmd->footer(
      "Rows and columns are config keys (dotted, or encoding, layers, width, heads, task, lr, seed, steps), "
      "'split' (the eval splits) or a per-group breakdown of the metrics such as 'length' or 'book_size'. "
      "Results may differ only in the rows, the columns and the seed (use --where to pick the rest); several "
      "folders are read as one, e.g. an experiment beside its controls. With "
      "--fewest KEY each cell is instead the fewest KEY (e.g. layers) whose mean (or, with --over-seeds, best "
      "or every seed) passes --threshold, e.g. "
      "`pathbench table results/word_problems --fewest layers --cols length`.");
  cmd->add_option("dirs", o->dirs, "folders of result files (searched recursively)")->required();
  cmd->add_option("--rows", o->table.rows, "row dimension")->capture_default_str();
  cmd->add_option("--cols", o->table.cols, "column dimension")->capture_default_str();
  cmd->add_option("--metric", o->table.metric,
                  fmt::format("metric to show (default: the task's primary metric); a field of the whole run ({}) "
                              "shows as the one split 'run'",
                              fmt::join(run_metrics(), ", ")));
  cmd->add_option("--split", o->table.split, "use only this eval split");
  cmd->add_option("--where", o->where, "keep results whose config key has this value: key=value; repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--seeds", o->seeds,
                  "use only these seeds (comma-separated), e.g. the seeds every cell has, so that each cell "
                  "rests on the same ones")
      ->delimiter(',');
  cmd->add_option("--fewest", o->table.fewest, "config key (e.g. layers): show its fewest value passing --threshold");
  cmd->add_option("--threshold", o->table.threshold,
                  "with --fewest: the mean (or the seeds --over-seeds names) must be above this (below, for "
                  "lower-is-better metrics); with --passing: each seed's value (rates and accuracies are "
                  "fractions: 0.9 for 90%)")
      ->capture_default_str();
  cmd->add_option("--over-seeds", o->table.over_seeds,
                  "with --fewest: which seeds must pass: mean (their mean), best (at least one) or all")
      ->capture_default_str();
  cmd->add_flag("--counts", o->table.counts,
               "rates: add the count pooled over seeds (errors or successes / scored predictions or sequences) "
               "and its exact binomial 95% interval; with --passing, the interval of the rate of passing seeds");
  cmd->add_flag("--per-seed", o->table.per_seed,
               "each cell lists every seed's value in seed order (· where a seed has no result) instead of mean ± "
               "std");
  cmd->add_flag("--passing", o->table.passing,
               "each cell counts the seeds whose value passes --threshold (k of n): how often a setting learns");
  cmd->add_option("--against", o->table.against,
                  "with --passing: test each row's count against this row's, per column (Fisher's exact test, "
                  "two-sided p); with --first-step: each row's first steps against this row's (log-rank test, a "
                  "run that never reached the value counted as still short of it at its last evaluation)");
  cmd->add_flag("--holm", o->table.holm,
               "with --against: also each p adjusted by Holm's method over all the table's comparisons (read "
               "the table as one family of tests)");
  cmd->add_option("--col-order", o->table.col_order,
                  "columns to show first, in this order (comma-separated, e.g. in_dist,sparse,dense); the others "
                  "follow")
      ->delimiter(',');
  cmd->add_option("--at-step", o->at_step,
                  "use each run's periodic evaluation at this step (from its curve file) instead of its final "
                  "metrics; runs that ended earlier keep their last, and interrupted runs that got past it count")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--first-step", o->first_step,
                  "show instead each run's first evaluation step at which --metric (default: the primary metric) "
                  "reached this value (from its curve file; rates and accuracies are fractions: 0.9 for 90%): how "
                  "fast each run learned; an interrupted run counts as still short of it at its last evaluation")
      ->check(CLI::Number);
  cmd->add_option("--out", o->out, "also write the table to this file");
  cmd->callback([o]() { table_command(*o); });
}

}  // namespace pathbench
