// Which config keys differ among results: a table may mix results only in its own keys (and what
// varies with them) and the seed, so it names every other key that differs and refuses them.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/options.h"

namespace pathbench::table {

// The config keys (outside `excluded` and the keys under them) whose value differs among `results`:
// as "key (v1, v2)" in `mixed`, or, for a task option that one of the task options in `leaders`
// determines (a task defined one per length), as its name in `following[leader]`.
struct DifferingKeys {
  std::vector<std::string> mixed;
  std::map<std::string, std::vector<std::string>> following;
};
DifferingKeys differing_keys(const std::vector<const json*>& results, const std::vector<std::string>& excluded,
                             const std::vector<std::string>& leaders = {});

// Throws "<what> differ in <keys>; pick one with --where …" when `differing` is not empty.
void reject_mixed(const std::vector<std::string>& differing, const std::string& what);

// A table key and the keys that vary with it: an encoding's options, a task's options.
std::vector<std::string> scope_of(const std::string& key);

}  // namespace pathbench::table
