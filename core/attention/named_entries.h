// What the encoding and op registries share: lists of entries with a `name`, their names, lookup by
// name, and adding and removing an entry for a registration's lifetime. `what` names the kind of
// entry in errors ("encoding", "op").
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"

namespace pathbench {

template <class Entry>
std::vector<std::string> entry_names(const std::vector<Entry>& list) {
  std::vector<std::string> names;
  for (const auto& e : list) names.push_back(e.name);
  return names;
}

// Throws pathbench::Error naming the unknown entry and listing the known ones.
template <class Entry>
const Entry& find_entry(const std::vector<Entry>& list, const std::string& name, const char* what) {
  for (const auto& e : list)
    if (e.name == name) return e;
  throw Error(fmt::format("unknown {} '{}' (known: {})", what, name, fmt::join(entry_names(list), ", ")));
}

// Throws pathbench::Error when the name is taken.
template <class Entry>
void add_entry(std::vector<Entry>& list, Entry entry, const char* what) {
  for (const auto& e : list)
    if (e.name == entry.name) throw Error(fmt::format("{} '{}' is already registered", what, entry.name));
  list.push_back(std::move(entry));
}

template <class Entry>
void remove_entry(std::vector<Entry>& list, const std::string& name) {
  list.erase(std::remove_if(list.begin(), list.end(), [&](const Entry& e) { return e.name == name; }), list.end());
}

}  // namespace pathbench
