// A seeded config fuzzer: mutated versions of the committed configs (values replaced by extreme
// numbers, wrong types and odd strings; keys deleted or added) go through run-config validation,
// the work of `pathbench run --dry-run`. Each must either be accepted or be refused with a
// pathbench::Error naming the config; any other exception is an internal error and fails. Bounded
// by a mutation count, not by time, so the test is the same on every machine.
#include <catch2/catch.hpp>

#include <filesystem>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "experiments/file_output.h"
#include "experiments/run_plan.h"
#include "experiments/task_provider.h"

using namespace pathbench;
namespace fs = std::filesystem;

namespace {

// Values that have broken validators before, or plausibly could: integer and float extremes,
// NaN-like strings, wrong types, empty containers.
const std::vector<json>& replacements() {
  static const std::vector<json> values = {
      nullptr, true, false, 0, 1, -1, 2, 3, 7, 64, 4097, 2147483647, 2147483648LL, 9007199254740993LL,
      -9223372036854775807LL, 1e30, -1e30, 1e308, 1e-308, 0.5, -0.5, 2.0000001, "", "x", "nan", "inf", "A5", "path",
      "cuda", "bf16", json::array(), json::array({0}), json::array({2147483648LL}), json::array({"a", 1}),
      json::object(), json{{"in_dist", json::array({4})}}, json{{"a", 0.5}}, json{{"train", json::array({1})}}};
  return values;
}

// Every path into `doc` (object keys and array indices), as JSON pointers.
void collect_paths(const json& doc, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
  out.push_back(at);
  if (doc.is_object())
    for (const auto& [key, value] : doc.items()) collect_paths(value, at / key, out);
  else if (doc.is_array())
    for (size_t i = 0; i < doc.size(); ++i) collect_paths(doc[i], at / i, out);
}

json mutate(json doc, CounterRng& rng) {
  const int edits = 1 + int(rng.below(3));
  for (int e = 0; e < edits; ++e) {
    std::vector<json::json_pointer> paths;
    collect_paths(doc, json::json_pointer(), paths);
    const json::json_pointer at = paths[rng.below(paths.size())];
    const uint64_t kind = rng.below(10);
    if (kind < 7 || at.empty()) {  // replace the value
      doc[at] = replacements()[rng.below(replacements().size())];
    } else if (kind < 9) {  // delete the key or element
      json& parent = doc[at.parent_pointer()];
      if (parent.is_object()) parent.erase(at.back());
      else if (parent.is_array()) parent.erase(parent.begin() + std::stoll(at.back()));
    } else if (doc[at].is_object()) {  // add a key
      doc[at]["surprise_key"] = replacements()[rng.below(replacements().size())];
    }
  }
  return doc;
}

}  // namespace

TEST_CASE("fuzzed configs are accepted or refused with a pathbench::Error, never an internal error", "[runner][fuzz]") {
  std::vector<std::pair<std::string, json>> seeds;
  for (const auto& e : fs::recursive_directory_iterator(std::string(PATHBENCH_SOURCE_DIR) + "/configs"))
    if (e.path().extension() == ".json") seeds.emplace_back(e.path().string(), json::parse(read_file(e.path().string())));
  REQUIRE(seeds.size() >= 5);
  CounterRng rng(20261201);
  int accepted = 0, refused = 0;
  for (int i = 0; i < 1000; ++i) {
    const auto& [name, base] = seeds[rng.below(seeds.size())];
    const json doc = mutate(base, rng);
    INFO("mutation " << i << " of " << name << ": " << doc.dump());
    try {
      plan_runs(doc, {}, "fuzzed.json", registry_task_provider());
      ++accepted;
    } catch (const Error& e) {
      CHECK_THAT(e.what(), Catch::Contains("fuzzed.json"));
      ++refused;
    } catch (const std::exception& e) {
      FAIL("internal error: " << e.what());
    }
  }
  // Both outcomes occur, so the mutations neither all break nor all miss the validators.
  CHECK(accepted > 50);
  CHECK(refused > 50);
}
