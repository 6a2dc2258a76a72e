// Sweeps: a config document may add `grid` (cartesian product) and `zip` (parallel lists) blocks
// that map dotted keys to lists of values; `--set key=value` overrides adjust any key.
//
// Precedence, lowest first: option defaults < the config file < grid/zip values < `--set`.
// `--set K=V` fixes K for every run and removes any grid/zip axis on K (or on a key under K);
// `--set grid.K=[...]` (or `zip.K=[...]`) makes K an axis, replacing an earlier `--set K=...`.
// Among overrides, later ones win.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/options.h"

namespace pathbench {

// A command-line override `key=value`.
struct Override {
  std::string key;
  json value;
};

// Parses "key=value": the value as JSON, falling back to the plain string ("path" needs no quotes).
// Throws pathbench::Error, naming `flag` (the option it came from), on a missing '=' or an empty key.
Override parse_override(const std::string& text, const std::string& flag = "--set");
// Every `--set` text of a command line, parsed in order.
std::vector<Override> parse_overrides(const std::vector<std::string>& texts);
// Where a sweep's settings come from, for error messages: "cfg.json", or "cfg.json with --set a=1,
// --set b=2" when command-line values replaced some of the file's.
std::string config_source(const std::string& path, const std::vector<std::string>& sets);

using SweepAxis = std::pair<std::string, std::vector<json>>;  // dotted key → its values

struct Sweep {
  json base;                     // the config without grid and zip
  std::vector<SweepAxis> grid;   // cartesian product: seed first (varies slowest), then key order
  std::vector<SweepAxis> zip;    // parallel lists of equal length, varying fastest of all
  std::vector<Override> fixed;   // `--set` values, applied after the axes
};

// Splits `doc` into base and axes, applies `overrides` in order and checks the sweep blocks (lists
// non-empty, zip lengths equal, no key swept twice). `where` names the file in errors.
Sweep make_sweep(json doc, const std::vector<Override>& overrides, const std::string& where);

struct ExpandedRun {
  json config;  // a run config (no grid, no zip)
  json axes;    // dotted key → this run's value, for every axis
};

// Every run of the sweep, in a fixed order: grid axes nested in key order, then the zip index.
std::vector<ExpandedRun> expand_sweep(const Sweep& sweep, const std::string& where);

}  // namespace pathbench
