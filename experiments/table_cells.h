// The cells of a results table: records grouped by cell and seed, and the text of each kind of table
// made from them (mean ± std or first steps, each seed's value, seeds passing, fewest levels passing),
// with the heading that says what the cells are.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/options.h"
#include "experiments/log_rank.h"
#include "experiments/results_table.h"
#include "experiments/table_records.h"

namespace pathbench::table {

using Cell = std::pair<json, json>;  // (row value, column value)
template <class T>
using ByCell = std::map<Cell, T>;

// Successes and trials summed over a cell's results.
struct PooledCount {
  int64_t k = 0, n = 0;
  bool complete = true;  // every result of the cell had a count
};

// A table's records by cell.
struct CellData {
  // cell → level of the --fewest key (null without one) → seed → its values (one, once checked)
  ByCell<std::map<json, std::map<json, std::vector<double>>>> by_seed;
  // cell → level → the values in seed order
  ByCell<std::map<json, std::vector<double>>> values;
  ByCell<PooledCount> pooled;  // the metric's counts pooled over the cell's results
  // First-step tables: each run's step, or its last evaluation where it never reached the value.
  ByCell<std::vector<TimeToEvent>> times;
  std::set<json> all_seeds;  // every seed of the records, one with no value included
};

// Groups `records` into cells of `row` × `col` (and levels of `fewest`, where given), checking that
// a cell has one value per seed and level and that its results differ only in the keys of
// `cell_excluded`.
CellData group_records(const std::vector<Record>& records, const Dim& row, const Dim& col, const Dim* fewest,
                       bool first_steps, const std::vector<std::string>& cell_excluded);

// How --over-seeds turns a cell's values across seeds into pass or fail, and how the heading says it.
struct SeedRule {
  enum Kind { kMean, kAny, kAll } kind;  // the mean passes, at least one seed does, every seed does
  const char* name;                      // the --over-seeds value
  const char* who;                       // "fewest layers with <who> <metric> > …"
  const char* over;                      // "(<over> 3 seeds; …)"
};
const SeedRule& seed_rule(const std::string& name);

// What every kind of table needs to write its cells.
struct TableSetting {
  const TableOptions& options;
  std::string metric;
  bool higher_is_better = true;
  std::optional<json> reference;  // the --against row, where there is one
  bool percent = false;           // a rate, shown in %
  bool whole = false;             // every value a whole number (counts, steps)
  double scale() const { return percent ? 100.0 : 1.0; }
  const char* unit() const { return percent ? "%" : ""; }
  bool passes(double x) const;         // past options.threshold in the metric's direction
  std::string shown(double x) const;   // a whole number or 3 significant digits
};

struct TableText {
  ByCell<std::string> cells;
  std::string heading;
};

// Seeds passing per cell ("k of n"), with --counts their interval, with --against Fisher's test.
TableText passing_table(const CellData& data, const TableSetting& s);
// Each seed's value per cell, in seed order.
TableText per_seed_table(const CellData& data, const TableSetting& s);
// Mean ± std over seeds per cell; for first steps with --against, the log-rank test.
TableText mean_table(const CellData& data, const TableSetting& s);
// The fewest level of the --fewest key (named `fewest`) at which the cell passes under `rule`.
TableText fewest_table(const CellData& data, const TableSetting& s, const SeedRule& rule);

}  // namespace pathbench::table
