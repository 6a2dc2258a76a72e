// Sweep expansion (grid × zip), --set parsing and override precedence, and sweep-block errors.
#include <catch2/catch.hpp>

#include <set>

#include "core/error.h"
#include "experiments/sweep.h"

using namespace pathbench;

namespace {

std::vector<ExpandedRun> expand(const json& doc, const std::vector<std::string>& sets = {}) {
  std::vector<Override> overrides;
  for (const auto& s : sets) overrides.push_back(parse_override(s));
  return expand_sweep(make_sweep(doc, overrides, "sweep.json"), "sweep.json");
}

}  // namespace

TEST_CASE("grid is cartesian, zip is parallel, and they multiply", "[runner]") {
  const json doc = json::parse(R"({
    "seed": 5, "model": {"d_model": 16},
    "grid": {"model.encoding": ["nope", "rope", "path"], "seed": [0, 1]},
    "zip": {"model.n_layers": [1, 2, 3, 4], "model.d_model": [8, 16, 32, 64]}
  })");
  const auto runs = expand(doc);
  REQUIRE(runs.size() == 3 * 2 * 4);
  std::set<std::string> distinct;
  for (const auto& r : runs) {
    distinct.insert(r.config.dump());
    CHECK_FALSE(r.config.contains("grid"));
    CHECK_FALSE(r.config.contains("zip"));
    // zip lists stay aligned
    CHECK(r.config["model"]["d_model"] == json(8 << (r.config["model"]["n_layers"].get<int>() - 1)));
    CHECK(r.axes.size() == 4);
  }
  CHECK(distinct.size() == runs.size());
  // Fixed order: the seed slowest, the other grid axes nested in key order, the zip index fastest.
  CHECK(runs[0].config["model"]["encoding"] == "nope");
  CHECK(runs[0].config["seed"] == 0);
  CHECK(runs[1].config["model"]["n_layers"] == 2);
  CHECK(runs[4].config["model"]["encoding"] == "rope");
  CHECK(runs[4].config["seed"] == 0);
  CHECK(runs[12].config["seed"] == 1);
  CHECK(runs[12].config["model"]["encoding"] == "nope");
}

TEST_CASE("a config without sweep blocks is one run", "[runner]") {
  const auto runs = expand(json{{"seed", 3}});
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].config == json{{"seed", 3}});
  CHECK(runs[0].axes.empty());
}

TEST_CASE("overrides: --set values parse as JSON, else as strings", "[runner]") {
  CHECK(parse_override("model.encoding=path").value == "path");
  CHECK(parse_override("training.steps=100").value == 100);
  CHECK(parse_override("optimizer.lr=3e-3").value == 3e-3);
  CHECK(parse_override("x=true").value == true);
  CHECK(parse_override("x=[1,2]").value == json::array({1, 2}));
  CHECK(parse_override("x=\"3\"").value == "3");
  CHECK(parse_override("x=a=b").value == "a=b");
  CHECK(parse_override("task.name=").value == "");
  CHECK_THROWS_WITH(parse_override("model.encoding", "--where"), Catch::StartsWith("--where 'model.encoding'"));
  CHECK_THROWS_WITH(parse_override("novalue"), Catch::Contains("novalue") && Catch::Contains("key.path=value"));
  CHECK_THROWS_AS(parse_override("=3"), Error);
  CHECK_THROWS_WITH(parse_override("model..x=3"), Catch::Contains("empty part"));
}

TEST_CASE("precedence: defaults < file < grid/zip < --set, later --set wins", "[runner]") {
  const json doc = json::parse(R"({"seed": 5, "model": {"n_layers": 1}, "grid": {"seed": [0, 1]},
                                  "zip": {"model.n_layers": [2, 3]}})");
  SECTION("grid and zip values replace the file's value") {
    const auto runs = expand(doc);
    REQUIRE(runs.size() == 4);
    for (const auto& r : runs) CHECK(r.config["seed"] != 5);
    CHECK(runs[0].config["model"]["n_layers"] == 2);
  }
  SECTION("--set on a swept key fixes it and removes the axis") {
    const auto runs = expand(doc, {"seed=7"});
    REQUIRE(runs.size() == 2);
    for (const auto& r : runs) {
      CHECK(r.config["seed"] == 7);
      CHECK_FALSE(r.axes.contains("seed"));
    }
  }
  SECTION("--set on a parent key removes the axes under it") {
    const auto runs = expand(doc, {"model={\"n_layers\": 4}"});
    REQUIRE(runs.size() == 2);
    for (const auto& r : runs) CHECK(r.config["model"] == json{{"n_layers", 4}});
  }
  SECTION("--set grid.K sweeps K, replacing the file's axis and value") {
    const auto runs = expand(doc, {"grid.seed=[7,8,9]", "grid.optimizer.lr=[0.1,0.2]"});
    REQUIRE(runs.size() == 3 * 2 * 2);
    CHECK(runs[0].config["optimizer"]["lr"] == 0.1);
    CHECK(runs[0].config["seed"] == 7);
  }
  SECTION("--set zip.K replaces one zip list (lengths must still agree)") {
    const auto runs = expand(doc, {"zip.model.n_layers=[5,6]"});
    REQUIRE(runs.size() == 4);
    CHECK(runs[1].config["model"]["n_layers"] == 6);
    CHECK_THROWS_WITH(expand(doc, {"zip.model.d_model=[8,16,32]"}), Catch::Contains("zip lists differ in length"));
  }
  SECTION("later overrides win over earlier ones") {
    CHECK(expand(doc, {"seed=7", "seed=8"})[0].config["seed"] == 8);
    CHECK(expand(doc, {"seed=7", "grid.seed=[1,2,3]"}).size() == 3 * 2);
    const auto fixed = expand(doc, {"grid.seed=[1,2,3]", "seed=4"});
    REQUIRE(fixed.size() == 2);
    CHECK(fixed[0].config["seed"] == 4);
  }
  SECTION("--set under a swept object applies to every value of the axis") {
    const json objects = json::parse(R"({"grid": {"task": [{"name": "a", "length": 1}, {"name": "b"}]}})");
    const auto runs = expand(objects, {"task.length=9"});
    REQUIRE(runs.size() == 2);
    CHECK(runs[0].config["task"] == json{{"name", "a"}, {"length", 9}});
    CHECK(runs[1].config["task"] == json{{"name", "b"}, {"length", 9}});
  }
}

TEST_CASE("sweep blocks are checked", "[runner]") {
  auto fails = [](const char* text, const std::vector<std::string>& sets = {}) {
    try {
      expand(json::parse(text), sets);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(fails(R"({"grid": {"seed": 3}})"), Catch::Contains("sweep.json") && Catch::Contains("grid.seed") &&
                                                     Catch::Contains("3") && Catch::Contains("list"));
  CHECK_THAT(fails(R"({"grid": {"seed": []}})"), Catch::Contains("grid.seed") && Catch::Contains("empty list"));
  CHECK_THAT(fails(R"({"grid": [1]})"), Catch::Contains("'grid'") && Catch::Contains("object"));
  CHECK_THAT(fails(R"({"zip": {"a": [1, 2], "b": [1]}})"),
             Catch::Contains("zip.a") && Catch::Contains("zip.b") && Catch::Contains("differ in length"));
  CHECK_THAT(fails(R"({"grid": {"seed": [1]}, "zip": {"seed": [2]}})"),
             Catch::Contains("grid.seed") && Catch::Contains("zip.seed"));
  CHECK_THAT(fails(R"({"grid": {"model": [{}], "model.encoding": ["rope"]}})"),
             Catch::Contains("grid.model") && Catch::Contains("grid.model.encoding"));
  CHECK_THAT(fails(R"({"grid": {"grid.seed": [1]}})"), Catch::Contains("grid.grid.seed"));
  CHECK_THAT(fails(R"({"seed": 1, "grid": {"seed.x": [1]}})"),
             Catch::Contains("seed.x") && Catch::Contains("not an object"));
  CHECK_THAT(fails(R"({})", {"grid.seed=4"}), Catch::Contains("grid.seed") && Catch::Contains("not a list"));
  CHECK_THAT(fails(R"([1, 2])"), Catch::Contains("sweep.json") && Catch::Contains("object"));
}
