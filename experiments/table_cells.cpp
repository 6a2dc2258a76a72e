// table_cells: a results table's records grouped by cell and seed, and the cells and heading of each
// kind of table.
#include "experiments/table_cells.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "experiments/binomial_interval.h"
#include "experiments/fisher_exact.h"
#include "experiments/holm_adjustment.h"
#include "experiments/table_config_keys.h"

namespace pathbench::table {

namespace {

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

// " (k / n, 95% CI lo–hi%)" for a rate, or "" when the cell lacks counts.
std::string count_text(const PooledCount& c, double scale, const char* unit) {
  if (!c.complete || c.n == 0) return "";
  const auto [lo, hi] = clopper_pearson(c.k, c.n);
  return fmt::format(" ({} / {}, 95% CI {:.3g}–{:.3g}{})", c.k, c.n, lo * scale, hi * scale, unit);
}

constexpr SeedRule kSeedRules[] = {{SeedRule::kMean, "mean", "mean", "mean over"},
                                   {SeedRule::kAny, "best", "the best seed's", "best of"},
                                   {SeedRule::kAll, "all", "every seed's", "each of"}};

// With --against: the p of `test(cell's data, the reference row's data in the same column)` for every
// cell outside the reference row whose column the reference row has.
template <class Data, class Test>
ByCell<double> tests_against(const ByCell<Data>& by_cell, const TableSetting& s, const Test& test) {
  ByCell<double> p_values;
  if (!s.reference) return p_values;
  for (const auto& [cell, data] : by_cell) {
    const auto ref = by_cell.find({*s.reference, cell.second});
    if (show(cell.first) != s.options.against && ref != by_cell.end()) p_values[cell] = test(data, ref->second);
  }
  return p_values;
}

// Each tested cell's note: "p 0.02", or with --holm "p 0.02, Holm 0.06" (adjusted over the table).
ByCell<std::string> against_notes(const ByCell<double>& p_values, bool holm) {
  std::vector<double> p;
  for (const auto& entry : p_values) p.push_back(entry.second);
  const std::vector<double> adjusted = holm ? holm_adjusted(p) : p;
  ByCell<std::string> notes;
  size_t i = 0;
  for (const auto& [cell, value] : p_values)
    notes[cell] = holm ? fmt::format("p {:.2g}, Holm {:.2g}", value, adjusted[i++]) : fmt::format("p {:.2g}", value);
  return notes;
}

std::string holm_heading(bool holm, size_t comparisons) {
  return holm ? fmt::format("; Holm: that p adjusted by Holm's method over the table's {} comparisons", comparisons)
              : std::string();
}

}  // namespace

CellData group_records(const std::vector<Record>& records, const Dim& row, const Dim& col, const Dim* fewest,
                       bool first_steps, const std::vector<std::string>& cell_excluded) {
  CellData d;
  ByCell<std::set<std::pair<const json*, json>>> seen;
  ByCell<std::vector<const json*>> members;
  for (const Record& r : records) {
    const Cell cell{coordinate(row, r), coordinate(col, r)};
    const json level = fewest ? config_value(*r.result, fewest->key) : json(nullptr);
    if (!seen[cell].insert({r.result, level}).second)
      throw Error(fmt::format("result {} has two values for row {} and column {} (a group in several splits?); "
                              "pick a split with --split",
                              (*r.result)["path"].get<std::string>(), show(cell.first), show(cell.second)));
    const json seed = config_value(*r.result, "seed");
    d.all_seeds.insert(seed);  // a seed whose value is null still gets its place ("·") in --per-seed cells
    if (r.value.is_number()) d.by_seed[cell][level][seed].push_back(r.value.get<double>());
    if (first_steps) {
      if (r.value.is_number())
        d.times[cell].push_back({r.value.get<double>(), true});
      else if (const json to = r.result->at("metrics").at(r.split).value("evaluated_to", json()); to.is_number())
        d.times[cell].push_back({to.get<double>(), false});
    }
    PooledCount& c = d.pooled[cell];
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
  for (const auto& [cell, by_level] : d.by_seed)
    for (const auto& [level, seeds] : by_level)
      for (const auto& [seed, v] : seeds) {
        if (v.size() > 1)
          throw Error(fmt::format("{} results with seed {} for row {} and column {}{} (the same run twice in the "
                                  "folder?)",
                                  v.size(), show(seed), show(cell.first), show(cell.second),
                                  fewest ? fmt::format(" at {} {}", fewest->name, show(level)) : ""));
        d.values[cell][level].push_back(v.front());
      }
  return d;
}

const SeedRule& seed_rule(const std::string& name) {
  for (const SeedRule& r : kSeedRules)
    if (name == r.name) return r;
  throw Error(fmt::format("--over-seeds '{}': must be mean, best or all", name));
}

bool TableSetting::passes(double x) const {
  return higher_is_better ? x > options.threshold : x < options.threshold;
}

std::string TableSetting::shown(double x) const {
  return whole ? fmt::format("{:.0f}", x) : fmt::format("{:.3g}", x);
}

TableText passing_table(const CellData& data, const TableSetting& s) {
  const TableOptions& o = s.options;
  ByCell<PooledCount> passed;  // seeds passing, of the seeds with a result
  for (const auto& [cell, by_level] : data.values) {
    const std::vector<double>& v = by_level.begin()->second;
    passed[cell] = {std::count_if(v.begin(), v.end(), [&](double x) { return s.passes(x); }), int64_t(v.size())};
  }
  const ByCell<double> p_values = tests_against(passed, s, [](const PooledCount& a, const PooledCount& b) {
    return fisher_exact_two_sided(a.k, a.n, b.k, b.n);
  });
  const ByCell<std::string> tests = against_notes(p_values, o.holm);
  TableText t;
  for (const auto& [cell, c] : passed) {
    std::vector<std::string> notes;
    if (o.counts) {
      const auto [lo, hi] = clopper_pearson(c.k, c.n);
      notes.push_back(fmt::format("{:.3g}%, CI {:.3g}–{:.3g}%", 100.0 * c.k / c.n, 100 * lo, 100 * hi));
    }
    if (const auto it = tests.find(cell); it != tests.end()) notes.push_back(it->second);
    t.cells[cell] = fmt::format("{} of {}", c.k, c.n);
    if (!notes.empty()) t.cells[cell] += fmt::format(" ({})", fmt::join(notes, "; "));
  }
  t.heading = fmt::format("{} by {} and {}: seeds with {} {} {} (k of the n seeds with a result)", s.metric, o.rows,
                          o.cols, s.metric, s.higher_is_better ? ">" : "<", o.threshold);
  if (o.counts) t.heading += "; the rate of passing seeds with its exact (Clopper–Pearson) 95% interval";
  if (s.reference)
    t.heading += fmt::format("; p: Fisher's exact test (two-sided) of the row's k of n against row {}'s in the same "
                             "column",
                             o.against);
  t.heading += holm_heading(o.holm, p_values.size());
  return t;
}

TableText per_seed_table(const CellData& data, const TableSetting& s) {
  const TableOptions& o = s.options;
  const bool counts = o.counts && s.percent;
  TableText t;
  for (const auto& [cell, by_level] : data.by_seed) {
    const std::map<json, std::vector<double>>& seeds = by_level.begin()->second;
    std::vector<std::string> shown;
    for (const json& seed : data.all_seeds) {
      const auto it = seeds.find(seed);
      shown.push_back(it == seeds.end() ? "·" : s.shown(it->second.front() * s.scale()));
    }
    t.cells[cell] = fmt::format("{}", fmt::join(shown, " / "));
    if (counts) t.cells[cell] += count_text(data.pooled.at(cell), s.scale(), s.unit());
  }
  std::vector<std::string> seed_names;
  for (const json& seed : data.all_seeds) seed_names.push_back(show(seed));
  const char* dot = s.metric == "first_step" ? "never reached the value, or no result" : "no result";
  t.heading = fmt::format("{}{} by {} and {}: each seed's value, seeds {} (·: {} for that seed)", s.metric,
                          s.percent ? " (%)" : "", o.rows, o.cols, fmt::join(seed_names, " / "), dot);
  if (counts)
    t.heading += fmt::format("; in parentheses: k / n pooled over the seeds (n = {}) and its exact "
                             "(Clopper–Pearson) 95% interval",
                             trials_key(s.metric));
  return t;
}

TableText mean_table(const CellData& data, const TableSetting& s) {
  const TableOptions& o = s.options;
  const bool counts = o.counts && s.percent;
  const ByCell<double> p_values = tests_against(data.times, s, log_rank_two_sided);  // first-step tables
  const ByCell<std::string> tests = against_notes(p_values, o.holm);
  std::set<size_t> seeds;  // how many seeds the cells have
  TableText t;
  for (const auto& [cell, by_level] : data.values) {
    const Stats st = stats_of(by_level.begin()->second);
    seeds.insert(st.n);
    t.cells[cell] = st.n > 1 && s.whole ? fmt::format("{:.0f} ± {:.0f}", st.mean, st.std)
                    : st.n > 1 ? fmt::format("{:.3g} ± {:.2g}{}", st.mean * s.scale(), st.std * s.scale(), s.unit())
                               : fmt::format("{}{}", s.shown(st.mean * s.scale()), s.unit());
    if (counts) t.cells[cell] += count_text(data.pooled.at(cell), s.scale(), s.unit());
    if (const auto it = tests.find(cell); it != tests.end()) t.cells[cell] += fmt::format(" ({})", it->second);
  }
  // First-step cells where no run reached the value: "—", still tested against the reference row.
  for (const auto& [cell, times] : data.times)
    if (!t.cells.count(cell)) {
      const auto it = tests.find(cell);
      t.cells[cell] = it == tests.end() ? "—" : fmt::format("— ({})", it->second);
    }
  const std::string n = seeds.empty()        ? "0"
                        : seeds.size() == 1 ? std::to_string(*seeds.begin())
                                            : fmt::format("{}–{}", *seeds.begin(), *seeds.rbegin());
  t.heading = fmt::format("{}{} by {} and {}: mean ± std over seeds (n = {} per cell)", s.metric,
                          s.percent ? " (%)" : "", o.rows, o.cols, n);
  if (counts)
    t.heading += fmt::format("; in parentheses: k / n, the count pooled over the seeds (n = {}), and the exact "
                             "(Clopper–Pearson) 95% interval of the pooled rate",
                             trials_key(s.metric));
  if (s.reference)
    t.heading += fmt::format("; p: log-rank test (two-sided) of the row's first steps against row {}'s in the same "
                             "column, a run that never reached the value counting as still short of it at its last "
                             "evaluation{}",
                             o.against, holm_heading(o.holm, p_values.size()));
  return t;
}

TableText fewest_table(const CellData& data, const TableSetting& s, const SeedRule& rule) {
  const TableOptions& o = s.options;
  const auto passes = [&](const std::vector<double>& v) {
    const auto one = [&](double x) { return s.passes(x); };
    if (rule.kind == SeedRule::kAny) return std::any_of(v.begin(), v.end(), one);
    if (rule.kind == SeedRule::kAll) return std::all_of(v.begin(), v.end(), one);
    return s.passes(stats_of(v).mean);
  };
  std::set<json> levels;
  size_t seeds = 0;  // the most seeds any (cell, level) has
  for (const auto& [cell, by_level] : data.values)
    for (const auto& [level, v] : by_level) levels.insert(level), seeds = std::max(seeds, v.size());
  TableText t;
  bool flagged = false;
  for (const auto& [cell, by_level] : data.values) {
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
      t.cells[cell] = caveats.empty() ? show(level) : fmt::format("{} ({})", show(level), fmt::join(caveats, "; "));
      flagged = flagged || !caveats.empty();
      break;
    }
  }
  std::vector<std::string> tried;
  for (const json& l : levels) tried.push_back(show(l));
  t.heading = fmt::format("fewest {} with {} {} {} {} ({} {} seeds; —: none of {})", o.fewest, rule.who, s.metric,
                          s.higher_is_better ? ">" : "<", o.threshold, rule.over, seeds, fmt::join(tried, ", "));
  if (flagged) t.heading += "; in parentheses: fewer seeds, or smaller values with no result";
  return t;
}

}  // namespace pathbench::table
