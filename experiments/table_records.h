// The dimensions of a results table (rows, columns: a split, a per-group breakdown or a config key)
// and its records, one metric value of one result's split or group; how a dimension's values are
// found, ordered and shown.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/options.h"

namespace pathbench::table {

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
std::string trials_key(const std::string& metric);

// The dimension `name` means for these results; `flag` (--rows, --cols, --fewest) names it in errors.
Dim resolve_dim(const std::string& name, const std::vector<const json*>& results, const std::string& flag);

// A result's config value at dotted `key`, or null.
json config_value(const json& result, const std::string& key);

// The value of dimension `d` at record `r`.
json coordinate(const Dim& d, const Record& r);

// The records of `metric` in `results`: one per split (only `only_split` where not empty), or one per
// group of each split when `group_key` names a breakdown ("per_length"); a run-level metric gives one
// per result, under the pseudo split "run".
std::vector<Record> make_records(const std::vector<const json*>& results, const std::string& group_key,
                                 const std::string& metric, const std::string& only_split);

// Values of a dimension in display order: encodings in registry order, splits in the tasks' order
// (a split no task names, such as the run-level metrics' "run", after them), numbers ascending, then
// strings.
std::vector<json> ordered_values(const Dim& d, const std::vector<Record>& records);

// A value as a table shows it: strings bare, anything else as JSON.
std::string show(const json& v);

// `values` with those named in `first` (by how they are shown) moved to the front in that order;
// `what` names the option in the error for a name that is not among them.
std::vector<json> reordered(std::vector<json> values, const std::vector<std::string>& first, const std::string& what);

}  // namespace pathbench::table
