// results_table: records from result documents, grouping into cells, aggregation and markdown.
#include "experiments/results_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/attention/registry.h"
#include "core/error.h"
#include "experiments/binomial_interval.h"
#include "experiments/fisher_exact.h"
#include "experiments/holm_adjustment.h"
#include "experiments/log_rank.h"
#include "experiments/json_path.h"

namespace pathbench {

namespace {

enum class DimKind { Split, Group, Config };

struct Dim {
  std::string name;
  DimKind kind;
  std::string key;  // the config key (Config) or the breakdown key "per_<name>" (Group)
};

// One metric value of one result: a split, maybe one group of it.
struct Record {
  const json* result;
  std::string split;
  json group;   // null unless a dimension is a group
  json value;   // number or null
  json trials;  // the count the metric is a rate of (scored predictions or sequences), or null
};

// The key of the count a rate metric is measured over: sequences for sequence accuracy, else the
// scored predictions.
std::string trials_key(const std::string& metric) {
  return metric.find("sequence") != std::string::npos ? "sequences" : "scored";
}

const std::vector<std::pair<std::string, std::string>>& aliases() {
  static const std::vector<std::pair<std::string, std::string>> a = {
      {"encoding", "model.encoding"}, {"layers", "model.n_layers"}, {"width", "model.d_model"},
      {"heads", "model.n_heads"},     {"task", "task.name"},        {"lr", "optimizer.lr"},
      {"seed", "seed"},               {"steps", "training.steps"}};
  return a;
}

Dim resolve_dim(const std::string& name, const std::vector<const json*>& results, const std::string& flag) {
  if (name == "split") return Dim{name, DimKind::Split, ""};
  const std::string key = config_key_of(name);
  for (const json* r : results)
    if (find_dotted((*r)["config"], key)) return Dim{name, DimKind::Config, key};
  const std::string per = "per_" + name;
  for (const json* r : results)
    for (const auto& [split, m] : (*r)["metrics"].items())
      if (m.is_object() && m.contains(per)) return Dim{name, DimKind::Group, per};
  std::string known;
  for (const auto& [alias, k] : aliases()) known += (known.empty() ? "" : ", ") + alias;
  throw Error(fmt::format("{} '{}': not 'split', a config key of the results (dotted, or one of {}) nor a "
                          "per-group breakdown ('{}') of their metrics",
                          flag, name, known, per));
}

json config_value(const json& result, const std::string& key) {
  const json* v = find_dotted(result["config"], key);
  return v ? *v : json(nullptr);
}

json coordinate(const Dim& d, const Record& r) {
  switch (d.kind) {
    case DimKind::Split: return r.split;
    case DimKind::Group: return r.group;
    case DimKind::Config: return config_value(*r.result, d.key);
  }
  return nullptr;
}

std::vector<std::string> splits_of(const json& result) {
  std::vector<std::string> out;
  if (result.contains("eval_splits") && result["eval_splits"].is_array())
    for (const auto& s : result["eval_splits"]) out.push_back(s);
  else
    for (const auto& [s, m] : result["metrics"].items()) out.push_back(s);
  return out;
}

// "64" → 64, other names stay strings.
json group_value(const std::string& name) {
  json v = json::parse(name, nullptr, false);
  return v.is_discarded() || !v.is_number() ? json(name) : v;
}

// The pseudo split of the run-level metrics.
constexpr const char* kRunSplit = "run";

std::vector<Record> make_records(const std::vector<const json*>& results, const std::string& group_key,
                                 const std::string& metric, const std::string& only_split) {
  std::vector<Record> records;
  if (is_run_metric(metric)) {
    if (!group_key.empty())
      throw Error(fmt::format("metric '{}' is a field of the whole run: it has no per-group breakdown", metric));
    if (!only_split.empty() && only_split != kRunSplit)
      throw Error(fmt::format("metric '{}' is a field of the whole run: its only split is '{}', not '{}'", metric,
                              kRunSplit, only_split));
    for (const json* r : results) records.push_back(Record{r, kRunSplit, nullptr, r->value(metric, json()), nullptr});
    return records;
  }
  const std::string trials = trials_key(metric);
  for (const json* r : results)
    for (const std::string& split : splits_of(*r)) {
      if (!only_split.empty() && split != only_split) continue;
      const json& m = (*r)["metrics"].value(split, json::object());
      if (group_key.empty()) {
        records.push_back(Record{r, split, nullptr, m.value(metric, json()), m.value(trials, json())});
        continue;
      }
      const json groups = m.value(group_key, json::object());
      for (const auto& [group, gm] : groups.items())
        records.push_back(Record{r, split, group_value(group), gm.value(metric, json()), gm.value(trials, json())});
    }
  return records;
}

// Values of a dimension in display order: encodings in registry order, splits in the tasks' order
// (a split no task names, such as the run-level metrics' "run", after them), numbers ascending, then
// strings.
std::vector<json> ordered_values(const Dim& d, const std::vector<Record>& records) {
  std::vector<json> values;
  for (const Record& r : records) {
    const json v = coordinate(d, r);
    if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
  }
  if (d.kind == DimKind::Split) {
    std::vector<json> ordered;
    std::set<std::string> seen;
    for (const Record& r : records)
      for (const auto& s : splits_of(*r.result))
        if (std::find(values.begin(), values.end(), json(s)) != values.end() && seen.insert(s).second)
          ordered.push_back(s);
    for (const json& v : values)
      if (seen.insert(v.get<std::string>()).second) ordered.push_back(v);
    return ordered;
  }
  std::vector<std::string> registry;
  if (d.key == "model.encoding") registry = encoding_names();
  auto rank = [&](const json& v) -> std::pair<int, size_t> {
    if (v.is_string()) {
      const auto it = std::find(registry.begin(), registry.end(), v.get<std::string>());
      if (it != registry.end()) return {0, size_t(it - registry.begin())};
      return {2, 0};
    }
    return {v.is_number() ? 1 : 3, 0};
  };
  std::stable_sort(values.begin(), values.end(), [&](const json& a, const json& b) {
    const auto ra = rank(a), rb = rank(b);
    if (ra != rb) return ra < rb;
    return a < b;
  });
  return values;
}

std::string show(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// `values` with those named in `first` (by how they are shown) moved to the front in that order.
std::vector<json> reordered(std::vector<json> values, const std::vector<std::string>& first, const std::string& what) {
  std::vector<json> front;
  for (const std::string& name : first) {
    const auto it = std::find_if(values.begin(), values.end(), [&](const json& v) { return show(v) == name; });
    if (it == values.end()) {
      std::vector<std::string> shown;
      for (const json& v : front) shown.push_back(show(v));
      for (const json& v : values) shown.push_back(show(v));
      throw Error(fmt::format("{}: '{}' is not a column here (columns: {})", what, name, fmt::join(shown, ", ")));
    }
    front.push_back(*it);
    values.erase(it);
  }
  front.insert(front.end(), values.begin(), values.end());
  return front;
}

// Every leaf of a config as dotted key → value.
void flatten(const json& j, const std::string& prefix, std::map<std::string, json>& out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
  } else {
    out[prefix] = j;
  }
}

// Is dotted key `key` the key `scope` or one under it ("model.encoding_options.rank" is under
// "model.encoding_options")?
bool at_or_under(const std::string& key, const std::string& scope) {
  return key == scope || key.rfind(scope + ".", 0) == 0;
}

// A config leaf's value in a flattened config, dumped ("(absent)" when it has none).
std::string leaf_text(const std::map<std::string, json>& flat, const std::string& key) {
  const auto it = flat.find(key);
  return it == flat.end() ? "(absent)" : it->second.dump();
}

// Does `key` take one value for each value of `leader` (e.g. per-length runs' eval splits follow the
// training length)? Keys under `leader` (its options) compare as one value.
bool follows(const std::vector<std::map<std::string, json>>& flat, const std::string& key, const std::string& leader) {
  std::map<std::string, std::string> value_of;  // leader's value → key's
  for (const auto& f : flat) {
    std::string lead;
    for (const auto& [k, v] : f)
      if (at_or_under(k, leader)) lead += k + "=" + v.dump() + ";";
    const auto [it, added] = value_of.emplace(lead, leaf_text(f, key));
    if (!added && it->second != leaf_text(f, key)) return false;
  }
  return true;
}

bool is_task_key(const std::string& key) { return key.rfind("task.", 0) == 0; }

// The config keys (outside `excluded` and the keys under them) whose value differs among `results`:
// as "key (v1, v2)" in `mixed`, or, for a task option that one of the task options in `leaders`
// determines (a task defined one per length), as its name in `following[leader]`.
struct DifferingKeys {
  std::vector<std::string> mixed;
  std::map<std::string, std::vector<std::string>> following;
};
DifferingKeys differing_keys(const std::vector<const json*>& results, const std::vector<std::string>& excluded,
                             const std::vector<std::string>& leaders = {}) {
  std::vector<std::map<std::string, json>> flat(results.size());
  for (size_t i = 0; i < results.size(); ++i) flatten((*results[i])["config"], "", flat[i]);
  std::set<std::string> keys;
  for (const auto& f : flat)
    for (const auto& [k, v] : f) keys.insert(k);
  DifferingKeys out;
  for (const std::string& k : keys) {
    if (std::any_of(excluded.begin(), excluded.end(),
                    [&](const std::string& e) { return at_or_under(k, e); }))
      continue;
    std::set<std::string> seen;
    for (const auto& f : flat) seen.insert(leaf_text(f, k));
    if (seen.size() < 2) continue;
    const auto leader = std::find_if(leaders.begin(), leaders.end(), [&](const std::string& l) {
      return is_task_key(k) && is_task_key(l) && follows(flat, k, l);
    });
    if (leader != leaders.end())
      out.following[*leader].push_back(k);
    else
      out.mixed.push_back(fmt::format("{} ({})", k, fmt::join(seen, ", ")));
  }
  return out;
}

void reject_mixed(const std::vector<std::string>& differing, const std::string& what) {
  if (differing.empty()) return;
  throw Error(fmt::format("{} differ in {}{}; pick one with --where key=value or make it --rows/--cols", what,
                          fmt::join(differing.begin(), differing.begin() + std::min<size_t>(differing.size(), 4), "; "),
                          differing.size() > 4 ? fmt::format(" and {} more keys", differing.size() - 4) : ""));
}

// A table key and the keys that vary with it: an encoding's options, a task's options.
std::vector<std::string> scope_of(const std::string& key) {
  std::vector<std::string> scope{key};
  if (key == "model.encoding") scope.push_back("model.encoding_options");
  if (key.size() > 5 && key.compare(key.size() - 5, 5, ".name") == 0) scope.push_back(key.substr(0, key.size() - 5));
  return scope;
}

bool is_ratio_metric(const std::string& metric) {
  return metric.find("rate") != std::string::npos || metric.find("accuracy") != std::string::npos ||
         metric.find("match") != std::string::npos;
}

struct Stats {
  double mean = 0, std = 0;
  size_t n = 0;
};

Stats stats_of(const std::vector<double>& v) {
  Stats s;
  s.n = v.size();
  if (v.empty()) return s;
  for (double x : v) s.mean += x;
  s.mean /= double(v.size());
  if (v.size() > 1) {
    for (double x : v) s.std += (x - s.mean) * (x - s.mean);
    s.std = std::sqrt(s.std / double(v.size() - 1));
  }
  return s;
}

// Successes and trials summed over a cell's results.
struct PooledCount {
  int64_t k = 0, n = 0;
  bool complete = true;  // every result of the cell had a count
};

// "k / n, 95 % CI [lo, hi]%" for a rate, or "" when the cell lacks counts.
std::string count_text(const PooledCount& c, double scale, const char* unit) {
  if (!c.complete || c.n == 0) return "";
  const auto [lo, hi] = clopper_pearson(c.k, c.n);
  return fmt::format(" ({} / {}, 95% CI {:.3g}–{:.3g}{})", c.k, c.n, lo * scale, hi * scale, unit);
}

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

// How --over-seeds turns a cell's values across seeds into pass or fail, and how the heading says it.
struct SeedRule {
  enum Kind { kMean, kAny, kAll } kind;  // the mean passes, at least one seed does, every seed does
  const char* name;                      // the --over-seeds value
  const char* who;                       // "fewest layers with <who> <metric> > …"
  const char* over;                      // "(<over> 3 seeds; …)"
};
constexpr SeedRule kSeedRules[] = {{SeedRule::kMean, "mean", "mean", "mean over"},
                                   {SeedRule::kAny, "best", "the best seed's", "best of"},
                                   {SeedRule::kAll, "all", "every seed's", "each of"}};

const SeedRule& seed_rule(const std::string& name) {
  for (const SeedRule& r : kSeedRules)
    if (name == r.name) return r;
  throw Error(fmt::format("--over-seeds '{}': must be mean, best or all", name));
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

}  // namespace

const std::vector<std::string>& run_metrics() {
  static const std::vector<std::string> fields = {"final_train_loss", "train_time_s", "eval_time_s",
                                                  "wall_time_s",      "tokens_per_s", "steps_done"};
  return fields;
}

bool is_run_metric(const std::string& metric) {
  const std::vector<std::string>& fields = run_metrics();
  return std::find(fields.begin(), fields.end(), metric) != fields.end();
}

bool higher_is_better(const json& result, const std::string& metric) {
  const bool by_name = metric.find("error") == std::string::npos && metric.find("loss") == std::string::npos &&
                       metric.find("time_s") == std::string::npos;
  return result.value("primary_metric", "") == metric ? result.value("higher_is_better", by_name) : by_name;
}

std::string config_key_of(const std::string& name) {
  for (const auto& [alias, key] : aliases())
    if (alias == name) return key;
  return name;
}

std::string results_table(const std::vector<json>& all, const TableOptions& o) {
  std::vector<const json*> results;
  std::map<std::string, std::vector<std::string>> left_out;  // status → ids
  for (const json& r : all) {
    bool keep = true;
    for (const auto& [key, value] : o.where) keep = keep && config_value(r, config_key_of(key)) == value;
    if (!keep) continue;
    if (r.value("status", "") == "done")
      results.push_back(&r);
    else
      left_out[r.value("status", "unknown")].push_back(r.value("id", "?") + "-" + r.value("hash", "?"));
  }
  if (results.empty()) throw Error("no finished results to tabulate (check the folder, --where and --seeds)");

  std::string metric = o.metric;
  std::set<std::string> primaries;
  for (const json* r : results) primaries.insert(r->value("primary_metric", ""));
  if (metric.empty()) {
    if (primaries.size() != 1 || primaries.begin()->empty())
      throw Error(fmt::format("the results have different primary metrics ({}); choose one with --metric",
                              fmt::join(primaries, ", ")));
    metric = *primaries.begin();
  }
  const json* direction = results.front();  // the last result whose primary metric this is, if any
  for (const json* r : results)
    if (r->value("primary_metric", "") == metric) direction = r;
  const bool higher_is_better = pathbench::higher_is_better(*direction, metric);

  const Dim row = resolve_dim(o.rows, results, "--rows"), col = resolve_dim(o.cols, results, "--cols");
  const SeedRule& rule = seed_rule(o.over_seeds);
  if (rule.kind != SeedRule::kMean && o.fewest.empty()) throw Error("--over-seeds applies to --fewest tables only");
  if (o.per_seed && !o.fewest.empty()) throw Error("--per-seed and --fewest do not combine (use --over-seeds)");
  if (o.passing && (o.per_seed || !o.fewest.empty()))
    throw Error("--passing does not combine with --per-seed or --fewest");
  const bool first_steps = metric == "first_step";  // a --first-step table (metrics_at_step.h)
  if (!o.against.empty() && !o.passing && !first_steps)
    throw Error("--against applies to --passing and --first-step tables only");
  if (!o.against.empty() && !o.passing && (o.per_seed || !o.fewest.empty()))
    throw Error("--against does not combine with --per-seed or --fewest");
  if (o.holm && o.against.empty()) throw Error("--holm applies to tables with --against only");
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
  if (std::none_of(records.begin(), records.end(), [](const Record& r) { return r.value.is_number(); })) {
    std::set<std::string> known;
    for (const Record& r : records) {
      const json metrics = r.result->value("metrics", json::object()).value(r.split, json::object());
      for (const auto& [key, value] : metrics.items())
        if (value.is_number()) known.insert(key);
    }
    throw Error(fmt::format("metric '{}' has no value in these results{} (their metrics: {})", metric,
                            o.split.empty() ? "" : " (split '" + o.split + "')", fmt::join(known, ", ")));
  }

  // cell → (value of the fewest key, or null) → seed → values (one, once checked below)
  std::map<std::pair<json, json>, std::map<json, std::map<json, std::vector<double>>>> by_seed;
  std::map<std::pair<json, json>, std::set<std::pair<const json*, json>>> seen;
  std::map<std::pair<json, json>, std::vector<const json*>> members;
  std::map<std::pair<json, json>, PooledCount> pooled;
  // First-step tables: each run's step, or its last evaluation where it never reached the value.
  std::map<std::pair<json, json>, std::vector<TimeToEvent>> times;
  std::set<json> all_seeds;
  for (const Record& r : records) {
    const std::pair<json, json> cell{coordinate(row, r), coordinate(col, r)};
    const json level = fewest ? config_value(*r.result, fewest->key) : json(nullptr);
    if (!seen[cell].insert({r.result, level}).second)
      throw Error(fmt::format("result {} has two values for row {} and column {} (a group in several splits?); "
                              "pick a split with --split",
                              (*r.result)["path"].get<std::string>(), show(cell.first), show(cell.second)));
    const json seed = config_value(*r.result, "seed");
    all_seeds.insert(seed);  // a seed whose value is null still gets its place ("·") in --per-seed cells
    if (r.value.is_number()) by_seed[cell][level][seed].push_back(r.value.get<double>());
    if (first_steps) {
      if (r.value.is_number())
        times[cell].push_back({r.value.get<double>(), true});
      else if (const json to = r.result->at("metrics").at(r.split).value("evaluated_to", json()); to.is_number())
        times[cell].push_back({to.get<double>(), false});
    }
    PooledCount& c = pooled[cell];
    if (r.value.is_number() && r.trials.is_number_integer()) {
      const int64_t n = r.trials.get<int64_t>();
      c.n += n;
      c.k += int64_t(std::llround(r.value.get<double>() * double(n)));
    } else {
      c.complete = false;
    }
    if (std::find(members[cell].begin(), members[cell].end(), r.result) == members[cell].end())
      members[cell].push_back(r.result);
  }
  for (const auto& [cell, in_cell] : members)
    reject_mixed(differing_keys(in_cell, cell_excluded).mixed,
                 fmt::format("the results of row {} and column {}", show(cell.first), show(cell.second)));
  // A cell (at each level of the --fewest key) has one value per seed; then values[cell][level] lists
  // them in seed order.
  std::map<std::pair<json, json>, std::map<json, std::vector<double>>> values;
  for (const auto& [cell, by_level] : by_seed)
    for (const auto& [level, seeds] : by_level)
      for (const auto& [seed, v] : seeds) {
        if (v.size() > 1)
          throw Error(fmt::format("{} results with seed {} for row {} and column {}{} (the same run twice in the "
                                  "folder?)",
                                  v.size(), show(seed), show(cell.first), show(cell.second),
                                  fewest ? fmt::format(" at {} {}", o.fewest, show(level)) : ""));
        values[cell][level].push_back(v.front());
      }

  const bool percent = is_ratio_metric(metric);
  const double scale = percent ? 100.0 : 1.0;
  const char* unit = percent ? "%" : "";
  // Counts and steps (every value a whole number, not a rate) print as whole numbers: 21000, not 2.1e+04.
  bool whole = !percent;
  for (const Record& r : records)
    whole = whole && (!r.value.is_number() || (std::fabs(r.value.get<double>()) < 1e15 &&
                                                   r.value.get<double>() == std::floor(r.value.get<double>())));
  const auto shown_value = [&](double x) { return whole ? fmt::format("{:.0f}", x) : fmt::format("{:.3g}", x); };
  std::map<std::pair<json, json>, std::string> cells;
  std::set<size_t> counts;
  std::string heading;
  const auto passing = [&](double x) { return higher_is_better ? x > o.threshold : x < o.threshold; };
  // --against: the row each other row is tested against, column by column; each cell's p and (with
  // --holm) that p adjusted over the whole table, as the note the cell carries.
  const std::vector<json> row_values = ordered_values(row, records);
  const auto reference = std::find_if(row_values.begin(), row_values.end(),
                                      [&](const json& r) { return show(r) == o.against; });
  if (!o.against.empty() && reference == row_values.end())
    throw Error(fmt::format("--against '{}' is not a row of the table", o.against));
  // by_cell: cell → what `test(cell's, reference's)` compares; the p of every cell outside the
  // reference row whose column the reference row has.
  const auto tests_against = [&](const auto& by_cell, const auto& test) {
    std::map<std::pair<json, json>, double> p_values;
    if (!o.against.empty())
      for (const auto& [cell, data] : by_cell) {
        const auto ref = by_cell.find({*reference, cell.second});
        if (show(cell.first) != o.against && ref != by_cell.end()) p_values[cell] = test(data, ref->second);
      }
    return p_values;
  };
  const auto against_notes = [&](const std::map<std::pair<json, json>, double>& p_values) {
    std::vector<double> p;
    for (const auto& entry : p_values) p.push_back(entry.second);
    const std::vector<double> adjusted = o.holm ? holm_adjusted(p) : p;
    std::map<std::pair<json, json>, std::string> notes;
    size_t i = 0;
    for (const auto& [cell, value] : p_values)
      notes[cell] = o.holm ? fmt::format("p {:.2g}, Holm {:.2g}", value, adjusted[i++]) : fmt::format("p {:.2g}", value);
    return notes;
  };
  const auto holm_heading = [&](size_t comparisons) {
    return o.holm ? fmt::format("; Holm: that p adjusted by Holm's method over the table's {} comparisons", comparisons)
                  : std::string();
  };
  if (o.passing) {
    std::map<std::pair<json, json>, PooledCount> passed;  // seeds passing, of the seeds with a result
    for (const auto& [cell, by_level] : values) {
      const std::vector<double>& v = by_level.begin()->second;
      passed[cell] = {std::count_if(v.begin(), v.end(), passing), int64_t(v.size())};
    }
    const std::map<std::pair<json, json>, double> p_values =
        tests_against(passed, [](const PooledCount& a, const PooledCount& b) {
          return fisher_exact_two_sided(a.k, a.n, b.k, b.n);
        });
    const std::map<std::pair<json, json>, std::string> tests = against_notes(p_values);
    for (const auto& [cell, c] : passed) {
      std::vector<std::string> notes;
      if (o.counts) {
        const auto [lo, hi] = clopper_pearson(c.k, c.n);
        notes.push_back(fmt::format("{:.3g}%, CI {:.3g}–{:.3g}%", 100.0 * c.k / c.n, 100 * lo, 100 * hi));
      }
      if (const auto it = tests.find(cell); it != tests.end()) notes.push_back(it->second);
      cells[cell] = fmt::format("{} of {}", c.k, c.n);
      if (!notes.empty()) cells[cell] += fmt::format(" ({})", fmt::join(notes, "; "));
    }
    heading = fmt::format("{} by {} and {}: seeds with {} {} {} (k of the n seeds with a result)", metric, o.rows,
                          o.cols, metric, higher_is_better ? ">" : "<", o.threshold);
    if (o.counts) heading += "; the rate of passing seeds with its exact (Clopper–Pearson) 95% interval";
    if (!o.against.empty())
      heading += fmt::format("; p: Fisher's exact test (two-sided) of the row's k of n against row {}'s in the same "
                             "column",
                             o.against);
    heading += holm_heading(p_values.size());
  } else if (!fewest && o.per_seed) {
    for (const auto& [cell, by_level] : by_seed) {
      const std::map<json, std::vector<double>>& seeds = by_level.begin()->second;
      std::vector<std::string> shown;
      for (const json& seed : all_seeds) {
        const auto it = seeds.find(seed);
        shown.push_back(it == seeds.end() ? "·" : shown_value(it->second.front() * scale));
      }
      cells[cell] = fmt::format("{}", fmt::join(shown, " / "));
      if (o.counts && percent) cells[cell] += count_text(pooled[cell], scale, unit);
    }
    std::vector<std::string> seed_names;
    for (const json& seed : all_seeds) seed_names.push_back(show(seed));
    heading = fmt::format("{}{} by {} and {}: each seed's value, seeds {} (·: no result for that seed)", metric,
                          percent ? " (%)" : "", o.rows, o.cols, fmt::join(seed_names, " / "));
    if (o.counts && percent)
      heading += fmt::format("; in parentheses: k / n pooled over the seeds (n = {}) and its exact "
                             "(Clopper–Pearson) 95% interval",
                             trials_key(metric));
  } else if (!fewest) {
    // first-step tables: the log-rank test against the row
    const std::map<std::pair<json, json>, double> p_values = tests_against(times, log_rank_two_sided);
    const std::map<std::pair<json, json>, std::string> tests = against_notes(p_values);
    for (const auto& [cell, by_level] : values) {
      const Stats s = stats_of(by_level.begin()->second);
      counts.insert(s.n);
      cells[cell] = s.n > 1 && whole ? fmt::format("{:.0f} ± {:.0f}", s.mean, s.std)
                    : s.n > 1          ? fmt::format("{:.3g} ± {:.2g}{}", s.mean * scale, s.std * scale, unit)
                                       : fmt::format("{}{}", shown_value(s.mean * scale), unit);
      if (o.counts && percent) cells[cell] += count_text(pooled[cell], scale, unit);
      if (const auto it = tests.find(cell); it != tests.end()) cells[cell] += fmt::format(" ({})", it->second);
    }
    const std::string n = counts.empty()        ? "0"
                          : counts.size() == 1 ? std::to_string(*counts.begin())
                                               : fmt::format("{}–{}", *counts.begin(), *counts.rbegin());
    heading = fmt::format("{}{} by {} and {}: mean ± std over seeds (n = {} per cell)", metric, percent ? " (%)" : "",
                          o.rows, o.cols, n);
    if (o.counts && percent)
      heading += fmt::format("; in parentheses: k / n, the count pooled over the seeds (n = {}), and the exact "
                             "(Clopper–Pearson) 95% interval of the pooled rate",
                             trials_key(metric));
    if (!o.against.empty())
      heading += fmt::format("; p: log-rank test (two-sided) of the row's first steps against row {}'s in the same "
                             "column, a run that never reached the value counting as still short of it at its last "
                             "evaluation{}",
                             o.against, holm_heading(p_values.size()));
  } else {
    const auto passes = [&](const std::vector<double>& v) {
      if (rule.kind == SeedRule::kAny) return std::any_of(v.begin(), v.end(), passing);
      if (rule.kind == SeedRule::kAll) return std::all_of(v.begin(), v.end(), passing);
      return passing(stats_of(v).mean);
    };
    std::set<json> levels;
    size_t seeds = 0;  // the most seeds any (cell, level) has
    for (const auto& [cell, by_level] : values)
      for (const auto& [level, v] : by_level) levels.insert(level), seeds = std::max(seeds, v.size());
    bool flagged = false;
    for (const auto& [cell, by_level] : values) {
      for (const json& level : levels) {  // ascending
        const auto it = by_level.find(level);
        if (it == by_level.end()) continue;
        if (!passes(it->second)) continue;
        // A fewer-seeds mean, or a smaller level with no result, weakens the claim: say so in the cell.
        std::vector<std::string> caveats;
        if (it->second.size() < seeds) caveats.push_back(fmt::format("{} of {} seeds", it->second.size(), seeds));
        std::vector<std::string> missing;
        for (const json& smaller : levels)
          if (smaller < level && !by_level.count(smaller)) missing.push_back(show(smaller));
        if (!missing.empty()) caveats.push_back(fmt::format("{} {} not run", o.fewest, fmt::join(missing, ", ")));
        cells[cell] = caveats.empty() ? show(level) : fmt::format("{} ({})", show(level), fmt::join(caveats, "; "));
        flagged = flagged || !caveats.empty();
        break;
      }
    }
    std::vector<std::string> tried;
    for (const json& l : levels) tried.push_back(show(l));
    heading = fmt::format("fewest {} with {} {} {} {} ({} {} seeds; —: none of {})", o.fewest, rule.who, metric,
                          higher_is_better ? ">" : "<", o.threshold, rule.over, seeds, fmt::join(tried, ", "));
    if (flagged) heading += "; in parentheses: fewer seeds, or smaller values with no result";
  }
  for (const auto& [leader, keys] : differing.following)
    heading += fmt::format("; {} follow{} {}", fmt::join(keys, ", "), keys.size() == 1 ? "s" : "", leader);
  std::string out = heading + "\n\n" + markdown(o.rows + " \\ " + o.cols, ordered_values(row, records),
                                                reordered(ordered_values(col, records), o.col_order, "--col-order"),
                                                cells);
  for (const auto& [status, ids] : left_out)
    out += fmt::format("\nLeft out: {} run{} with status {}: {}\n", ids.size(), ids.size() == 1 ? "" : "s", status,
                       fmt::join(ids, ", "));
  return out + code_versions(results);
}

}  // namespace pathbench
