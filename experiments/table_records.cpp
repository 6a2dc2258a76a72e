// table_records: a results table's dimensions and records, and the order its rows and columns take.
#include "experiments/table_records.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/attention/registry.h"
#include "core/error.h"
#include "experiments/json_path.h"
#include "experiments/result_fields.h"

namespace pathbench::table {

namespace {

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

}  // namespace

std::string trials_key(const std::string& metric) {
  return metric.find("sequence") != std::string::npos ? "sequences" : "scored";
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
  for (const auto& [alias, k] : config_key_aliases()) known += (known.empty() ? "" : ", ") + alias;
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

}  // namespace pathbench::table
