// Markdown tables over result documents, shaped like the paper's: one row per value of a config
// key (encodings by default), one column per eval split, per-group value (e.g. length), or config
// value; each cell the mean ± std of a metric across seeds (or every seed's value). A second form
// reports, per cell, the fewest values of a key (e.g. layers) whose mean metric passes a threshold.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/options.h"

namespace pathbench {

// A dimension of a table: "split", a per-group breakdown name ("length" reads "per_length"), or a
// config key — dotted ("model.n_layers") or an alias (encoding, layers, width, heads, task, lr, seed, steps).
struct TableOptions {
  std::string rows = "encoding";
  std::string cols = "split";
  std::string metric;      // default: the results' primary metric
  std::string split;       // only this eval split ("": all)
  std::vector<std::pair<std::string, json>> where;  // keep results whose config key equals the value
  std::string fewest;      // "": mean ± std table; else a config key: its fewest value passing `threshold`
  double threshold = 0.9;  // passed when above it (below it for lower-is-better metrics): --fewest, --passing
  // With `fewest`, which seeds must pass: "mean" (their mean does), "best" (at least one seed), "all"
  // (every seed): learning that hinges on the seed shows as "best" passing well before "all".
  std::string over_seeds = "mean";
  // Add each cell's pooled count k / n and its exact 95 % interval (rate metrics); with `passing`,
  // the interval of the rate of passing seeds.
  bool counts = false;
  // Each cell lists every seed's value in seed order ("·" where a seed has no result) instead of the
  // mean ± std: outcomes that split by seed (a run learns or it does not) read as such.
  bool per_seed = false;
  // Each cell counts the seeds whose value passes `threshold` ("2 of 3"): how often a setting learns,
  // where outcomes are all-or-nothing per run.
  bool passing = false;
  // With `passing`: a row (as shown) whose count each other row's is tested against, column by
  // column (Fisher's exact test, two-sided): is one encoding's rate of learning really different?
  std::string against;
  // With `against`: also each p adjusted by Holm's method over all the table's comparisons, so that
  // a table read as a whole keeps its false-positive rate.
  bool holm = false;
  // Column values (as shown) to put first, in this order; the other columns follow in the default
  // order. A value that is not a column is an error.
  std::vector<std::string> col_order;
};

// Whether higher values of `metric` are better in a result document: the result's own
// "higher_is_better" where `metric` is its primary metric, else judged by the name (errors, losses
// and times are lower-is-better).
bool higher_is_better(const json& result, const std::string& metric);
// Throws pathbench::Error naming `option` when `value` lies outside [0, 1] for a rate or accuracy
// (judged by the metric's name; tables show those in %).
void check_fraction(const std::string& option, double value, const std::string& metric);

// The table (with a heading line and notes, and last the code versions its results recorded:
// "Code: 2b60287 (104 results), 5bf9372 (45 results)") for the result documents (as load_results
// returns them). Throws pathbench::Error when there is nothing to show or the options do not fit the results.
std::string results_table(const std::vector<json>& results, const TableOptions& options);

}  // namespace pathbench
