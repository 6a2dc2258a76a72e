// results_table: which results and metric a table shows, checks that they fit together, and the
// markdown of the kind of table asked for.
#include "experiments/results_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/error.h"
#include "experiments/result_fields.h"
#include "experiments/table_cells.h"
#include "experiments/table_config_keys.h"
#include "experiments/table_records.h"

namespace pathbench {

namespace {

using namespace table;

std::string markdown(const std::string& corner, const std::vector<json>& rows, const std::vector<json>& cols,
                     const std::map<std::pair<json, json>, std::string>& cells) {
  std::vector<std::string> header{corner}, rule{"---"};
  for (const json& c : cols) header.push_back(show(c)), rule.push_back("---");
  std::string out = fmt::format("| {} |\n|{}|\n", fmt::join(header, " | "), fmt::join(rule, "|"));
  for (const json& r : rows) {
    std::vector<std::string> line{show(r)};
    for (const json& c : cols) {
      const auto it = cells.find({r, c});
      line.push_back(it == cells.end() ? "—" : it->second);
    }
    out += fmt::format("| {} |\n", fmt::join(line, " | "));
  }
  return out;
}

// "Code: 2b60287 (104 results), 5bf9372 (45 results)": the source versions the table's results
// recorded, most results first; empty when none recorded one (results from before the git field).
std::string code_versions(const std::vector<const json*>& results) {
  std::map<std::string, int64_t> count;
  bool any = false;
  for (const json* r : results) {
    const json git = r->value("git", json::object());
    const bool known = git.is_object() && git.value("commit", json()).is_string();
    any = any || known;
    std::string name = known ? git["commit"].get<std::string>().substr(0, 7) : "unrecorded";
    if (known && git.value("dirty", json()).is_boolean() && git["dirty"].get<bool>()) name += " with uncommitted changes";
    ++count[name];
  }
  if (!any) return "";
  std::vector<std::pair<std::string, int64_t>> order(count.begin(), count.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (const auto& [name, n] : order) parts.push_back(fmt::format("{} ({} result{})", name, n, n == 1 ? "" : "s"));
  return fmt::format("\nCode: {}\n", fmt::join(parts, ", "));
}

// The metric asked for, or the results' one primary metric.
std::string metric_of(const std::vector<const json*>& results, const std::string& asked) {
  if (!asked.empty()) return asked;
  std::set<std::string> primaries;
  for (const json* r : results) primaries.insert(r->value("primary_metric", ""));
  if (primaries.size() != 1 || primaries.begin()->empty())
    throw Error(fmt::format("the results have different primary metrics ({}); choose one with --metric",
                            fmt::join(primaries, ", ")));
  return *primaries.begin();
}

// Throws for table options that do not combine.
void check_combination(const TableOptions& o, bool first_steps) {
  if (o.over_seeds != "mean" && o.fewest.empty()) throw Error("--over-seeds applies to --fewest tables only");
  if (o.per_seed && !o.fewest.empty()) throw Error("--per-seed and --fewest do not combine (use --over-seeds)");
  if (o.passing && (o.per_seed || !o.fewest.empty()))
    throw Error("--passing does not combine with --per-seed or --fewest");
  // Their cells count only values, and a run that never reached --first-step's value has none.
  if (first_steps && (o.passing || !o.fewest.empty()))
    throw Error("--first-step does not combine with --passing or --fewest (a run that never reached the value has "
                "no step to count)");
  if (!o.against.empty() && !o.passing && !first_steps)
    throw Error("--against applies to --passing and --first-step tables only");
  if (!o.against.empty() && !o.passing && (o.per_seed || !o.fewest.empty()))
    throw Error("--against does not combine with --per-seed or --fewest");
  if (o.holm && o.against.empty()) throw Error("--holm applies to tables with --against only");
}

// Throws, naming the metrics there are, when no record has a value of `metric`.
void check_has_values(const std::vector<Record>& records, const std::string& metric, const std::string& split) {
  if (std::any_of(records.begin(), records.end(), [](const Record& r) { return r.value.is_number(); })) return;
  std::set<std::string> known;
  for (const Record& r : records) {
    const json metrics = r.result->value("metrics", json::object()).value(r.split, json::object());
    for (const auto& [key, value] : metrics.items())
      if (value.is_number()) known.insert(key);
  }
  throw Error(fmt::format("metric '{}' has no value in these results{} (their metrics: {})", metric,
                          split.empty() ? "" : " (split '" + split + "')", fmt::join(known, ", ")));
}

bool is_ratio_metric(const std::string& metric) {
  return metric.find("rate") != std::string::npos || metric.find("accuracy") != std::string::npos ||
         metric.find("match") != std::string::npos;
}

// Throws when a --where key is in no result, or its value in none (the values there are named).
void check_where(const std::vector<json>& all, const std::vector<std::pair<std::string, json>>& where) {
  for (const auto& [key, value] : where) {
    std::set<std::string> values;
    bool matched = false;
    for (const json& r : all) {
      const json v = config_value(r, config_key_of(key));
      if (v.is_null()) continue;
      values.insert(show(v));
      matched = matched || v == value;
    }
    if (values.empty()) throw Error(fmt::format("--where {}: no result has config key '{}'", key, config_key_of(key)));
    if (!matched)
      throw Error(fmt::format("--where {}={}: no result has that value (they have: {})", key, show(value),
                              fmt::join(values, ", ")));
  }
}

}  // namespace

void check_fraction(const std::string& option, double value, const std::string& metric) {
  if (is_ratio_metric(metric) && (value < 0 || value > 1))
    throw Error(fmt::format("{} {}: metric '{}' is a fraction from 0 to 1 (tables print it in %; for 90 % give "
                            "0.9)",
                            option, value, metric));
}

bool higher_is_better(const json& result, const std::string& metric) {
  const bool by_name = metric.find("error") == std::string::npos && metric.find("loss") == std::string::npos &&
                       metric.find("time_s") == std::string::npos;
  return result.value("primary_metric", "") == metric ? result.value("higher_is_better", by_name) : by_name;
}

std::string results_table(const std::vector<json>& all, const TableOptions& o) {
  check_where(all, o.where);
  std::vector<const json*> results;
  std::map<std::string, std::vector<std::string>> left_out;  // status → ids
  for (const json& r : all) {
    bool keep = true;
    for (const auto& [key, value] : o.where) keep = keep && config_value(r, config_key_of(key)) == value;
    if (!keep) continue;
    // An interrupted run counts where --at-step or --first-step read metrics from its curve.
    const std::string status = r.value("status", "");
    const auto metrics = r.find("metrics");
    if (status == "done" || (status == "interrupted" && metrics != r.end() && metrics->is_object() && !metrics->empty()))
      results.push_back(&r);
    else
      left_out[r.value("status", "unknown")].push_back(r.value("id", "?") + "-" + r.value("hash", "?"));
  }
  if (results.empty()) {
    std::vector<std::string> unfinished;  // "2 interrupted", "1 failed"
    for (const auto& [status, ids] : left_out) unfinished.push_back(fmt::format("{} {}", ids.size(), status));
    throw Error(fmt::format("no finished results to tabulate{} (check the folder, --where and --seeds)",
                            unfinished.empty() ? "" : fmt::format(": {}", fmt::join(unfinished, ", "))));
  }

  const std::string metric = metric_of(results, o.metric);
  const json* direction = results.front();  // the last result whose primary metric this is, if any
  for (const json* r : results)
    if (r->value("primary_metric", "") == metric) direction = r;
  const bool higher_is_better = pathbench::higher_is_better(*direction, metric);

  const Dim row = resolve_dim(o.rows, results, "--rows"), col = resolve_dim(o.cols, results, "--cols");
  const SeedRule& rule = seed_rule(o.over_seeds);
  const bool first_steps = metric == "first_step";  // a --first-step table (metrics_at_step.h)
  check_combination(o, first_steps);
  if (o.passing || !o.fewest.empty()) check_fraction("--threshold", o.threshold, metric);
  std::optional<Dim> fewest;
  if (!o.fewest.empty()) {
    fewest = resolve_dim(o.fewest, results, "--fewest");
    if (fewest->kind != DimKind::Config) throw Error(fmt::format("--fewest '{}': must be a config key", o.fewest));
  }
  if (row.kind == DimKind::Group && col.kind == DimKind::Group)
    throw Error("--rows and --cols cannot both be per-group breakdowns");
  // Results may differ only in the table's keys (and what varies with them) and the seed; within a
  // cell only in the seed (and the --fewest key).
  std::vector<std::string> excluded{"seed"}, cell_excluded{"seed"};
  for (const Dim* d : {&row, &col})
    if (d->kind == DimKind::Config)
      for (const auto& k : scope_of(d->key)) excluded.push_back(k);
  if (fewest) excluded.push_back(fewest->key), cell_excluded.push_back(fewest->key);
  // A task option that takes one value per value of a task option in the rows or columns (the eval
  // splits of runs trained one per length) is part of that row or column; the heading names it.
  std::vector<std::string> leaders;
  for (const Dim* d : {&row, &col})
    if (d->kind == DimKind::Config) leaders.push_back(d->key);
  const DifferingKeys differing = differing_keys(results, excluded, leaders);
  reject_mixed(differing.mixed, "the results");

  const std::string group_key = row.kind == DimKind::Group ? row.key : col.kind == DimKind::Group ? col.key : "";
  const std::vector<Record> records = make_records(results, group_key, metric, o.split);
  if (records.empty()) throw Error(fmt::format("the results have no metrics for these rows and columns (split '{}')", o.split));
  if (!first_steps) check_has_values(records, metric, o.split);  // where no run reached the value, every cell says so

  const CellData data = group_records(records, row, col, fewest ? &*fewest : nullptr, first_steps, cell_excluded);
  const bool percent = is_ratio_metric(metric);
  // Counts and steps (every value a whole number, not a rate) print as whole numbers: 21000, not 2.1e+04.
  bool whole = !percent;
  for (const Record& r : records)
    whole = whole && (!r.value.is_number() || (std::fabs(r.value.get<double>()) < 1e15 &&
                                                   r.value.get<double>() == std::floor(r.value.get<double>())));
  // --against: the row each other row is tested against, column by column.
  const std::vector<json> row_values = ordered_values(row, records);
  std::optional<json> reference;
  if (!o.against.empty()) {
    const auto it =
        std::find_if(row_values.begin(), row_values.end(), [&](const json& r) { return show(r) == o.against; });
    if (it == row_values.end()) throw Error(fmt::format("--against '{}' is not a row of the table", o.against));
    reference = *it;
  }
  const TableSetting s{o, metric, higher_is_better, reference, percent, whole};
  TableText t = o.passing    ? passing_table(data, s)
                : fewest     ? fewest_table(data, s, rule)
                : o.per_seed ? per_seed_table(data, s)
                             : mean_table(data, s);
  for (const auto& [leader, keys] : differing.following)
    t.heading += fmt::format("; {} follow{} {}", fmt::join(keys, ", "), keys.size() == 1 ? "s" : "", leader);
  std::string out = t.heading + "\n\n" + markdown(o.rows + " \\ " + o.cols, row_values,
                                                  reordered(ordered_values(col, records), o.col_order, "--col-order"),
                                                  t.cells);
  for (const auto& [status, ids] : left_out)
    out += fmt::format("\nLeft out: {} run{} with status {}{}: {}\n", ids.size(), ids.size() == 1 ? "" : "s", status,
                       status == "interrupted" ? " (--at-step reads them where they got to)" : "", fmt::join(ids, ", "));
  return out + code_versions(results);
}

}  // namespace pathbench
