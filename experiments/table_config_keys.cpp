// table_config_keys: the config keys that differ among results, and which of them follow a table key.
#include "experiments/table_config_keys.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/error.h"

namespace pathbench::table {

namespace {

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

}  // namespace

DifferingKeys differing_keys(const std::vector<const json*>& results, const std::vector<std::string>& excluded,
                             const std::vector<std::string>& leaders) {
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

std::vector<std::string> scope_of(const std::string& key) {
  std::vector<std::string> scope{key};
  if (key == "model.encoding") scope.push_back("model.encoding_options");
  if (key.size() > 5 && key.compare(key.size() - 5, 5, ".name") == 0) scope.push_back(key.substr(0, key.size() - 5));
  return scope;
}

}  // namespace pathbench::table
