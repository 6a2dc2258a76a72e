// Sweep construction (overrides, checks) and expansion into runs.
#include "experiments/sweep.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "experiments/json_path.h"

namespace pathbench {

namespace {

bool same_or_under(const std::string& key, const std::string& root) {
  return key == root || (key.size() > root.size() && key.compare(0, root.size(), root) == 0 && key[root.size()] == '.');
}

// Grid order: the seed varies slowest, so that a sweep stopped part-way (a time limit, a first
// shard) holds every cell of its first seeds; the other keys follow in key order.
bool axis_before(const SweepAxis& a, const SweepAxis& b) {
  return std::pair{a.first != "seed", a.first} < std::pair{b.first != "seed", b.first};
}

std::vector<SweepAxis> read_axes(const json& block, const std::string& block_name, const std::string& where) {
  std::vector<SweepAxis> axes;
  if (block.is_null()) return axes;
  if (!block.is_object())
    throw Error(fmt::format("{}: key '{}' has value {} (expected an object mapping dotted keys to lists)", where,
                            block_name, block.dump()));
  for (const auto& [key, values] : block.items()) {
    if (!values.is_array())
      throw Error(fmt::format("{}: key '{}.{}' has value {} (expected a list of values)", where, block_name, key,
                              values.dump()));
    axes.emplace_back(key, std::vector<json>(values.begin(), values.end()));
  }
  std::sort(axes.begin(), axes.end(), axis_before);
  return axes;
}

void remove_axes_on(std::vector<SweepAxis>& axes, const std::string& key) {
  axes.erase(std::remove_if(axes.begin(), axes.end(), [&](const SweepAxis& a) { return same_or_under(a.first, key); }),
             axes.end());
}

void set_axis(std::vector<SweepAxis>& axes, const std::string& key, std::vector<json> values) {
  for (auto& a : axes)
    if (a.first == key) {
      a.second = std::move(values);
      return;
    }
  axes.emplace_back(key, std::move(values));
  std::sort(axes.begin(), axes.end(), axis_before);
}

void check_axes(const Sweep& s, const std::string& where) {
  std::vector<std::pair<std::string, std::string>> all;  // (block, key)
  for (const auto& a : s.grid) all.emplace_back("grid", a.first);
  for (const auto& a : s.zip) all.emplace_back("zip", a.first);
  for (const auto& [block, key] : all) {
    split_dotted(key, fmt::format("{}: {}", where, block));
    if (same_or_under(key, "grid") || same_or_under(key, "zip"))
      throw Error(fmt::format("{}: key '{}.{}' sweeps a sweep block", where, block, key));
  }
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = i + 1; j < all.size(); ++j)
      if (same_or_under(all[i].second, all[j].second) || same_or_under(all[j].second, all[i].second))
        throw Error(fmt::format("{}: key '{}.{}' and key '{}.{}' sweep the same setting", where, all[i].first,
                                all[i].second, all[j].first, all[j].second));
  for (const auto& [block, axes] : {std::pair{"grid", &s.grid}, std::pair{"zip", &s.zip}})
    for (const auto& [key, values] : *axes)
      if (values.empty()) throw Error(fmt::format("{}: key '{}.{}' has an empty list", where, block, key));
  for (const auto& [key, values] : s.zip)
    if (values.size() != s.zip.front().second.size())
      throw Error(fmt::format("{}: zip lists differ in length: key 'zip.{}' has {} values, key 'zip.{}' has {}", where,
                              s.zip.front().first, s.zip.front().second.size(), key, values.size()));
}

}  // namespace

Override parse_override(const std::string& text, const std::string& flag) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) throw Error(fmt::format("{} '{}': expected key.path=value", flag, text));
  Override o{text.substr(0, eq), json()};
  const std::string value = text.substr(eq + 1);
  o.value = json::parse(value, nullptr, false);
  if (o.value.is_discarded()) o.value = value;
  split_dotted(o.key, flag);
  return o;
}

std::string config_source(const std::string& path, const std::vector<std::string>& sets) {
  std::string source = path;
  for (size_t i = 0; i < sets.size(); ++i) source += (i == 0 ? " with --set " : ", --set ") + sets[i];
  return source;
}

std::vector<Override> parse_overrides(const std::vector<std::string>& texts) {
  std::vector<Override> overrides;
  for (const std::string& text : texts) overrides.push_back(parse_override(text));
  return overrides;
}

Sweep make_sweep(json doc, const std::vector<Override>& overrides, const std::string& where) {
  if (!doc.is_object()) throw Error(fmt::format("{}: expected a JSON object at the top level", where));
  Sweep s;
  s.grid = read_axes(doc.contains("grid") ? doc["grid"] : json(), "grid", where);
  s.zip = read_axes(doc.contains("zip") ? doc["zip"] : json(), "zip", where);
  doc.erase("grid");
  doc.erase("zip");
  s.base = std::move(doc);
  for (const Override& o : overrides) {
    const bool to_grid = o.key.rfind("grid.", 0) == 0, to_zip = o.key.rfind("zip.", 0) == 0;
    if (to_grid || to_zip) {
      const std::string key = o.key.substr(to_grid ? 5 : 4);
      if (!o.value.is_array())
        throw Error(fmt::format("--set {}: value {} is not a list of values", o.key, o.value.dump()));
      remove_axes_on(to_grid ? s.zip : s.grid, key);
      s.fixed.erase(std::remove_if(s.fixed.begin(), s.fixed.end(),
                                   [&](const Override& f) { return same_or_under(f.key, key); }),
                    s.fixed.end());
      set_axis(to_grid ? s.grid : s.zip, key, std::vector<json>(o.value.begin(), o.value.end()));
    } else {
      remove_axes_on(s.grid, o.key);
      remove_axes_on(s.zip, o.key);
      s.fixed.push_back(o);
    }
  }
  check_axes(s, where);
  return s;
}

std::vector<ExpandedRun> expand_sweep(const Sweep& sweep, const std::string& where) {
  const size_t zip_count = sweep.zip.empty() ? 1 : sweep.zip.front().second.size();
  size_t total = zip_count;
  for (const auto& axis : sweep.grid) total *= axis.second.size();
  std::vector<ExpandedRun> runs;
  runs.reserve(total);
  for (size_t n = 0; n < total; ++n) {
    ExpandedRun run{sweep.base, json::object()};
    size_t rest = n;
    const size_t zip_index = rest % zip_count;
    rest /= zip_count;
    std::vector<std::pair<const std::string*, const json*>> chosen;
    for (auto it = sweep.grid.rbegin(); it != sweep.grid.rend(); ++it) {
      chosen.emplace_back(&it->first, &it->second[rest % it->second.size()]);
      rest /= it->second.size();
    }
    std::reverse(chosen.begin(), chosen.end());
    for (const auto& axis : sweep.zip) chosen.emplace_back(&axis.first, &axis.second[zip_index]);
    for (const auto& [key, value] : chosen) {
      set_dotted(run.config, *key, *value, fmt::format("{}: sweep axis", where));
      run.axes[*key] = *value;
    }
    for (const Override& o : sweep.fixed) set_dotted(run.config, o.key, o.value, "--set");
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace pathbench
