// Result tables on fixture result documents: mean ± std across seeds, row and column order,
// per-group columns, filters, the fewest-layers table, the checks against mixing runs, and tables
// from the runs' curves: the metrics of an evaluation at a given step (--at-step) and the first step
// reaching a threshold (--first-step), and how interrupted runs enter them.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "experiments/file_output.h"
#include "experiments/metrics_at_step.h"
#include "experiments/result_file.h"
#include "experiments/result_fields.h"
#include "experiments/results_table.h"
#include "tests/runner_fixture.h"

using namespace pathbench;

namespace {

json result(const std::string& encoding, int seed, int layers, const json& metrics, const std::string& status = "done") {
  static int counter = 0;
  return json{{"pathbench_result", kResultFormat},
              {"id", encoding + "-s" + std::to_string(seed)},
              {"hash", std::to_string(counter++)},
              {"path", "fixture/" + std::to_string(counter) + ".json"},
              {"status", status},
              {"config",
               {{"model", {{"encoding", encoding}, {"n_layers", layers}, {"encoding_options", json::object()}}},
                {"task", {{"name", "flipflop"}}},
                {"seed", seed}}},
              {"eval_splits", metrics.contains("longer") ? json{"in_dist", "longer"} : json{"in_dist", "sparse", "dense"}},
              {"primary_metric", "error_rate"},
              {"higher_is_better", false},
              {"metrics", metrics}};
}

json splits(double in_dist, double sparse, double dense) {
  return json{{"dense", {{"error_rate", dense}}}, {"in_dist", {{"error_rate", in_dist}}}, {"sparse", {{"error_rate", sparse}}}};
}

// Word-problem style: sequence accuracy per length in two splits.
json lengths(double a8, double a16, double a64) {
  return json{{"in_dist", {{"sequence_accuracy", a16}, {"per_length", {{"8", {{"sequence_accuracy", a8}}}, {"16", {{"sequence_accuracy", a16}}}}}}},
              {"longer", {{"sequence_accuracy", a64}, {"per_length", {{"64", {{"sequence_accuracy", a64}}}}}}}};
}

}  // namespace

TEST_CASE("table: mean ± std across seeds, encodings in registry order, splits in task order", "[runner]") {
  const std::vector<json> results = {
      result("rope", 0, 1, splits(0.1, 0.4, 0.0)), result("rope", 1, 1, splits(0.3, 0.5, 0.0)),
      result("nope", 0, 1, splits(0.5, 0.5, 0.5)), result("nope", 1, 1, splits(0.5, 0.5, 0.5)),
      result("rope", 2, 1, json::object(), "nan")};
  const std::string table = results_table(results, TableOptions{});
  CHECK(table ==
        "error_rate (%) by encoding and split: mean ± std over seeds (n = 2 per cell)\n\n"
        "| encoding \\ split | in_dist | sparse | dense |\n"
        "|---|---|---|---|\n"
        "| nope | 50 ± 0% | 50 ± 0% | 50 ± 0% |\n"
        "| rope | 20 ± 14% | 45 ± 7.1% | 0 ± 0% |\n"
        "\nLeft out: 1 run with status nan: rope-s2-" + results[4]["hash"].get<std::string>() + "\n");

  TableOptions transposed;
  transposed.rows = "split";
  transposed.cols = "encoding";
  transposed.metric = "error_rate";
  transposed.where = {{"seed", 0}};
  CHECK_THAT(results_table(results, transposed),
             Catch::Contains("(n = 1 per cell)") && Catch::Contains("| split \\ encoding | nope | rope |") &&
                 Catch::Contains("| in_dist | 50% | 10% |") && Catch::Contains("| dense | 50% | 0% |"));
}

TEST_CASE("table: per-group columns, a chosen split and metric", "[runner]") {
  const std::vector<json> results = {result("rope", 0, 2, lengths(1.0, 0.5, 0.0)),
                                     result("path", 0, 2, lengths(1.0, 1.0, 0.95))};
  TableOptions o;
  o.cols = "length";
  o.metric = "sequence_accuracy";
  const std::string table = results_table(results, o);
  CHECK_THAT(table, Catch::Contains("| encoding \\ length | 8 | 16 | 64 |") &&
                        Catch::Contains("| rope | 100% | 50% | 0% |") && Catch::Contains("| path | 100% | 100% | 95% |"));
  o.split = "longer";
  CHECK_THAT(results_table(results, o), Catch::Contains("| encoding \\ length | 64 |"));
  o.split = "";
  o.metric = "missing_metric";
  CHECK_THROWS_WITH(results_table(results, o), Catch::Contains("metric 'missing_metric' has no value") &&
                                                  Catch::Contains("sequence_accuracy"));
  o.split = "nonexistent";
  CHECK_THROWS_WITH(results_table(results, o), Catch::Contains("no metrics") && Catch::Contains("nonexistent"));
}

TEST_CASE("table: fewest layers reaching a threshold per length", "[runner]") {
  std::vector<json> results;
  for (int seed : {0, 1}) {
    results.push_back(result("rope", seed, 1, lengths(0.95, 0.2, 0.0)));
    results.push_back(result("rope", seed, 2, lengths(1.0, 0.95, seed == 0 ? 0.95 : 0.8)));
    results.push_back(result("path", seed, 1, lengths(1.0, 0.99, 0.91)));
    results.push_back(result("path", seed, 2, lengths(1.0, 1.0, 1.0)));
  }
  TableOptions o;
  o.cols = "length";
  o.metric = "sequence_accuracy";
  o.fewest = "layers";
  const std::string table = results_table(results, o);
  CHECK_THAT(table, Catch::Contains("fewest layers with mean sequence_accuracy > 0.9 (mean over 2 seeds") &&
                        Catch::Contains("none of 1, 2") && Catch::Contains("| rope | 1 | 2 | — |") &&
                        Catch::Contains("| path | 1 | 1 | 1 |"));
  CHECK_THAT(table, !Catch::Contains("in parentheses"));
  // A passing level with fewer seeds, or with a smaller level that has no result, is marked.
  std::vector<json> partial = results;
  partial.push_back(result("fox", 0, 2, lengths(1.0, 1.0, 1.0)));
  const std::string marked = results_table(partial, o);
  CHECK_THAT(marked, Catch::Contains("| fox | 2 (1 of 2 seeds; layers 1 not run) |") &&
                         Catch::Contains("in parentheses: fewer seeds, or smaller values with no result"));
  // Which seeds must pass: rope at length 64 passes with 2 layers in seed 0 only (0.95 and 0.8).
  o.over_seeds = "best";
  CHECK_THAT(results_table(results, o), Catch::Contains("with the best seed's sequence_accuracy > 0.9 (best of 2 seeds") &&
                                            Catch::Contains("| rope | 1 | 2 | 2 |"));
  o.over_seeds = "all";
  CHECK_THAT(results_table(results, o), Catch::Contains("with every seed's sequence_accuracy > 0.9 (each of 2 seeds") &&
                                            Catch::Contains("| rope | 1 | 2 | — |") &&
                                            Catch::Contains("| path | 1 | 1 | 1 |"));
  o.over_seeds = "median";
  CHECK_THROWS_WITH(results_table(results, o), Catch::Contains("--over-seeds 'median'"));
  o.over_seeds = "best";
  o.fewest = "";
  CHECK_THROWS_WITH(results_table(results, o), Catch::Contains("--over-seeds applies to --fewest"));
  o.over_seeds = "mean";
  // Without --fewest the layers differ inside each cell.
  CHECK_THROWS_WITH(results_table(results, o), Catch::Contains("model.n_layers (1, 2)") && Catch::Contains("--where"));
  o.where = {{"layers", 2}};
  CHECK_THAT(results_table(results, o), Catch::Contains("| rope | 100 ± 0% | 95 ± 0% | 87.5 ± 11% |"));
}

TEST_CASE("table: results that differ beyond rows, columns and seeds are not mixed", "[runner]") {
  std::vector<json> results = {result("rope", 0, 1, splits(0.1, 0.2, 0.3)), result("path", 0, 2, splits(0, 0, 0))};
  CHECK_THROWS_WITH(results_table(results, TableOptions{}),
                    Catch::Contains("the results differ in model.n_layers (1, 2)"));
  TableOptions by_layers;
  by_layers.rows = "layers";
  CHECK_THROWS_WITH(results_table(results, by_layers), Catch::Contains("model.encoding"));
  // The encoding's options vary with the encoding.
  results[1]["config"]["model"]["n_layers"] = 1;
  results[1]["config"]["model"]["encoding_options"] = {{"gate", true}};
  CHECK_NOTHROW(results_table(results, TableOptions{}));
  // But two option settings of one encoding in one cell are rejected.
  json other = result("path", 1, 1, splits(0, 0, 0));
  results.push_back(other);
  CHECK_THROWS_WITH(results_table(results, TableOptions{}), Catch::Contains("row path"));
}

TEST_CASE("table: task options that follow a task option in the columns are part of the column", "[runner]") {
  // One model per training length (Merrill et al.'s setting): the eval split in_dist is the training
  // length, so the split's lengths and the shortest training word vary with the column.
  std::vector<json> results;
  for (int length : {4, 8})
    for (int seed : {0, 1}) {
      json r = result("path", seed, 2, lengths(0.9, 0.95, 0.0));
      r["config"]["task"]["train_max_length"] = length;
      r["config"]["task"]["train_min_length"] = length;
      r["config"]["task"]["eval_splits"] = {{"in_dist", {length}}};
      results.push_back(r);
    }
  TableOptions o;
  o.cols = "task.train_max_length";
  o.metric = "sequence_accuracy";
  o.split = "in_dist";
  const std::string table = results_table(results, o);
  CHECK_THAT(table, Catch::Contains("task.eval_splits.in_dist, task.train_min_length follow task.train_max_length") &&
                        Catch::Contains("| encoding \\ task.train_max_length | 4 | 8 |"));
  // A task option that varies within a column is still refused, and so is a model key that follows.
  results[1]["config"]["task"]["train_min_length"] = 1;
  CHECK_THROWS_WITH(results_table(results, o), Catch::Contains("the results differ in task.train_min_length"));
  results[1]["config"]["task"]["train_min_length"] = 4;
  for (json& r : results) r["config"]["model"]["n_layers"] = r["config"]["task"]["train_max_length"];
  CHECK_THROWS_WITH(results_table(results, o), Catch::Contains("the results differ in model.n_layers"));
}

TEST_CASE("table: bad dimensions and empty inputs are clear errors", "[runner]") {
  const std::vector<json> results = {result("rope", 0, 1, splits(0.1, 0.2, 0.3))};
  TableOptions o;
  o.rows = "colour";
  CHECK_THROWS_WITH(results_table(results, o), Catch::Contains("--rows 'colour'") && Catch::Contains("per_colour"));
  CHECK_THROWS_WITH(results_table({result("rope", 0, 1, json::object(), "failed"),
                                   result("rope", 1, 1, json::object(), "interrupted"),
                                   result("rope", 2, 1, json::object(), "interrupted")},
                                  TableOptions{}),
                    Catch::Contains("no finished results to tabulate: 1 failed, 2 interrupted"));
  o.rows = "encoding";
  o.fewest = "split";
  CHECK_THROWS_WITH(results_table(results, o), Catch::Contains("--fewest 'split'"));
  CHECK(config_key_of("layers") == "model.n_layers");
  // --where: a key no result has, or a value none has, is named (not "no finished results").
  TableOptions w;
  w.where = {{"colour", "red"}};
  CHECK_THROWS_WITH(results_table(results, w), Catch::Contains("--where colour: no result has config key 'colour'"));
  w.where = {{"encoding", "pth"}};
  CHECK_THROWS_WITH(results_table(results, w),
                    Catch::Contains("--where encoding=pth: no result has that value (they have: rope)"));
  CHECK(config_key_of("optimizer.lr") == "optimizer.lr");
}

TEST_CASE("table --counts: counts pooled over seeds with their exact binomial interval", "[runner]") {
  auto counted = [](double rate, int64_t scored) { return json{{"in_dist", {{"error_rate", rate}, {"scored", scored}}}}; };
  json one_split = result("path", 0, 1, counted(0.0, 1000000));
  one_split["eval_splits"] = {"in_dist"};
  json second = result("path", 1, 1, counted(0.0, 500000));
  second["eval_splits"] = {"in_dist"};
  json third = result("rope", 0, 1, counted(0.25, 400));
  third["eval_splits"] = {"in_dist"};
  TableOptions o;
  o.counts = true;
  const std::string table = results_table({one_split, second, third}, o);
  // 0 of 1.5M: the 95 % upper bound is 1 − 0.025^(1/n) = 2.459e-6 → 0.000246 %.
  CHECK_THAT(table, Catch::Contains("| path | 0 ± 0% (0 / 1500000, 95% CI 0–0.000246%) |") &&
                        Catch::Contains("| rope | 25% (100 / 400, 95% CI 20.8–29.5%) |") &&
                        Catch::Contains("pooled over the seeds (n = scored)"));
  // Without counts in the results, the cells stay plain.
  json bare = result("rope", 0, 1, json{{"in_dist", {{"error_rate", 0.5}}}});
  bare["eval_splits"] = {"in_dist"};
  CHECK_THAT(results_table({bare}, o), Catch::Contains("| rope | 50% |"));
}

TEST_CASE("table --col-order: named columns first in that order, the rest after, unknown names are errors",
          "[runner]") {
  const std::vector<json> results = {result("rope", 0, 1, splits(0.1, 0.4, 0.0)),
                                     result("nope", 0, 1, splits(0.5, 0.5, 0.5))};
  TableOptions o;
  o.col_order = {"dense", "in_dist"};
  const std::string table = results_table(results, o);
  CHECK(table.find("| encoding \\ split | dense | in_dist | sparse |\n") != std::string::npos);
  CHECK(table.find("| rope | 0% | 10% | 40% |\n") != std::string::npos);
  o.col_order = {"in_dist", "dense_typo"};
  CHECK_THROWS_WITH(results_table(results, o), Catch::Contains("--col-order: 'dense_typo' is not a column") &&
                                                    Catch::Contains("in_dist, sparse, dense"));
}

TEST_CASE("table: its last line names the code versions of the results in it, most results first", "[runner]") {
  std::vector<json> results = {result("rope", 0, 1, splits(0.1, 0.4, 0.0)), result("rope", 1, 1, splits(0.3, 0.5, 0.0)),
                               result("nope", 0, 1, splits(0.5, 0.5, 0.5)), result("nope", 1, 1, splits(0.5, 0.5, 0.5)),
                               result("nope", 0, 2, splits(0.5, 0.5, 0.5))};
  TableOptions o;
  o.where = {{"layers", 1}};  // the 2-layer result is not in the table, so not counted
  CHECK_THAT(results_table(results, o), !Catch::Contains("Code:"));  // none recorded
  results[0]["git"] = json{{"commit", "5bf9372a2ed5942ba2e40d5a7b7175b51d98ebf9"}, {"dirty", false}};
  results[1]["git"] = json{{"commit", "2b60287aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}, {"dirty", false}};
  results[2]["git"] = json{{"commit", "2b60287aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}, {"dirty", nullptr}};
  results[3]["git"] = json{{"commit", "2b60287aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}, {"dirty", true}};
  results[4]["git"] = json{{"commit", "5bf9372a2ed5942ba2e40d5a7b7175b51d98ebf9"}, {"dirty", false}};
  const std::string table = results_table(results, o);
  CHECK(table.substr(table.rfind("\n\nCode:")) ==
        "\n\nCode: 2b60287 (2 results), 2b60287 with uncommitted changes (1 result), 5bf9372 (1 result)\n");
  results[0].erase("git");
  CHECK_THAT(results_table(results, o), Catch::Contains("unrecorded (1 result)"));
}

TEST_CASE("table: a field of the whole run (final_train_loss, times) as the metric of one split 'run'", "[runner]") {
  std::vector<json> results = {result("rope", 0, 1, splits(0.1, 0.4, 0.0)), result("rope", 1, 1, splits(0.3, 0.5, 0.0)),
                               result("nope", 0, 1, splits(0.5, 0.5, 0.5)), result("nope", 0, 2, splits(0.5, 0.5, 0.5))};
  const double losses[] = {0.5, 1.5, 3.25, 2.0}, seconds[] = {10, 30, 7, 9};
  for (size_t i = 0; i < results.size(); ++i)
    results[i]["final_train_loss"] = losses[i], results[i]["train_time_s"] = seconds[i];
  TableOptions o;
  o.metric = "final_train_loss";
  o.where = {{"layers", 1}};
  CHECK(results_table(results, o) ==
        "final_train_loss by encoding and split: mean ± std over seeds (n = 1–2 per cell)\n\n"
        "| encoding \\ split | run |\n"
        "|---|---|\n"
        "| nope | 3.25 |\n"
        "| rope | 1 ± 0.71 |\n");
  o.metric = "train_time_s";
  o.where.clear();
  o.cols = "layers";
  o.split = "run";
  CHECK_THAT(results_table(results, o), Catch::Contains("| nope | 7 | 9 |") && Catch::Contains("| rope | 20 ± 14 | — |"));
  CHECK_FALSE(higher_is_better(results[0], "train_time_s"));  // lower times are better
  o.split = "in_dist";
  CHECK_THROWS_WITH(results_table(results, o), Catch::Contains("its only split is 'run', not 'in_dist'"));
  // a run-level field has no per-length values
  json words = result("path", 0, 1, lengths(1.0, 0.9, 0.0));
  words["final_train_loss"] = 0.1;
  TableOptions by_length;
  by_length.metric = "final_train_loss";
  by_length.cols = "length";
  CHECK_THROWS_WITH(results_table({words}, by_length), Catch::Contains("no per-group breakdown"));
}

TEST_CASE("table --per-seed: every seed's value in seed order, · for a seed without a result", "[runner]") {
  const std::vector<json> results = {result("rope", 2, 1, splits(0.3, 0.5, 0.0)), result("rope", 0, 1, splits(0.1, 0.4, 0.0)),
                                     result("nope", 0, 1, splits(0.5, 0.5, 0.5)), result("nope", 1, 1, splits(0.25, 0.5, 0.5)),
                                     result("rope", 1, 1, json::object(), "nan")};
  TableOptions o;
  o.per_seed = true;
  o.split = "in_dist";
  CHECK(results_table(results, o) ==
        "error_rate (%) by encoding and split: each seed's value, seeds 0 / 1 / 2 (·: no result for that seed)\n\n"
        "| encoding \\ split | in_dist |\n"
        "|---|---|\n"
        "| nope | 50 / 25 / · |\n"
        "| rope | 10 / · / 30 |\n"
        "\nLeft out: 1 run with status nan: rope-s1-" + results[4]["hash"].get<std::string>() + "\n");
  o.fewest = "layers";
  CHECK_THROWS_WITH(results_table(results, o), Catch::Contains("--per-seed and --fewest do not combine"));
}

TEST_CASE("table: two results of one seed in a cell (at one --fewest level) are an error, not a mean over both", "[runner]") {
  const std::vector<json> twice = {result("rope", 0, 1, splits(0.1, 0.4, 0.0)), result("rope", 0, 1, splits(0.3, 0.4, 0.0))};
  for (const bool per_seed : {false, true}) {
    TableOptions o;
    o.per_seed = per_seed;
    o.split = "in_dist";
    CHECK_THROWS_WITH(results_table(twice, o), Catch::Contains("2 results with seed 0 for row rope and column in_dist"));
  }
  // In a fewest-layers table the check is per level: one seed at two layer counts is fine, twice at one is not.
  TableOptions o;
  o.fewest = "layers";
  o.split = "in_dist";
  const std::vector<json> two_levels = {result("rope", 0, 1, splits(0.1, 0.4, 0.0)), result("rope", 0, 2, splits(0.3, 0.4, 0.0))};
  CHECK_NOTHROW(results_table(two_levels, o));
  CHECK_THROWS_WITH(results_table(twice, o),
                    Catch::Contains("2 results with seed 0 for row rope and column in_dist at layers 1"));
}

TEST_CASE("table --passing: each cell counts the seeds that pass --threshold", "[runner]") {
  const std::vector<json> results = {result("rope", 0, 1, splits(0.1, 0.4, 0.0)), result("rope", 1, 1, splits(0.3, 0.5, 0.0)),
                                     result("rope", 2, 1, splits(0.05, 0.5, 0.0)), result("nope", 0, 1, splits(0.5, 0.5, 0.5))};
  TableOptions o;
  o.passing = true;
  o.split = "in_dist";
  o.threshold = 0.2;  // error_rate: lower is better, so a seed passes below 0.2
  CHECK(results_table(results, o) ==
        "error_rate by encoding and split: seeds with error_rate < 0.2 (k of the n seeds with a result)\n\n"
        "| encoding \\ split | in_dist |\n"
        "|---|---|\n"
        "| nope | 0 of 1 |\n"
        "| rope | 2 of 3 |\n");
  o.per_seed = true;
  CHECK_THROWS_WITH(results_table(results, o), Catch::Contains("--passing does not combine"));
  o.per_seed = false;
  o.threshold = 20;  // meant as 20 %
  CHECK_THROWS_WITH(results_table(results, o),
                    Catch::Contains("--threshold 20: metric 'error_rate' is a fraction from 0 to 1"));
}

TEST_CASE("table --passing --counts --against --holm: the pass rate's interval and Fisher's test against a row", "[runner]") {
  const std::vector<json> results = {result("rope", 0, 1, splits(0.1, 0.4, 0.0)), result("rope", 1, 1, splits(0.3, 0.5, 0.0)),
                                     result("rope", 2, 1, splits(0.05, 0.5, 0.0)), result("nope", 0, 1, splits(0.5, 0.5, 0.5))};
  TableOptions o;
  o.passing = true;
  o.threshold = 0.2;
  o.against = "nope";
  // dense: 3 of 3 against 0 of 1 — of the tables with these margins (2 or 3 passes in rope's row,
  // 3/4 and 1/4 likely) the observed one is the less likely, so p = 1/4.
  CHECK(results_table(results, o) ==
        "error_rate by encoding and split: seeds with error_rate < 0.2 (k of the n seeds with a result); p: Fisher's "
        "exact test (two-sided) of the row's k of n against row nope's in the same column\n\n"
        "| encoding \\ split | in_dist | sparse | dense |\n"
        "|---|---|---|---|\n"
        "| nope | 0 of 1 | 0 of 1 | 0 of 1 |\n"
        "| rope | 2 of 3 (p 1) | 0 of 3 (p 1) | 3 of 3 (p 0.25) |\n");
  // Clopper–Pearson for 2 of 3: the lower bound solves 3p² − 2p³ = 0.025, the upper one is 0.975^(1/3).
  o.counts = true;
  o.split = "in_dist";
  o.against.clear();
  CHECK(results_table(results, o) ==
        "error_rate by encoding and split: seeds with error_rate < 0.2 (k of the n seeds with a result); the rate "
        "of passing seeds with its exact (Clopper–Pearson) 95% interval\n\n"
        "| encoding \\ split | in_dist |\n"
        "|---|---|\n"
        "| nope | 0 of 1 (0%, CI 0–97.5%) |\n"
        "| rope | 2 of 3 (66.7%, CI 9.43–99.2%) |\n");
  // --holm: the three tests against nope read as one family; dense's 0.25 is the smallest, so ×3.
  o.counts = false;
  o.split.clear();
  o.against = "nope";
  o.holm = true;
  CHECK(results_table(results, o) ==
        "error_rate by encoding and split: seeds with error_rate < 0.2 (k of the n seeds with a result); p: Fisher's "
        "exact test (two-sided) of the row's k of n against row nope's in the same column; Holm: that p adjusted by "
        "Holm's method over the table's 3 comparisons\n\n"
        "| encoding \\ split | in_dist | sparse | dense |\n"
        "|---|---|---|---|\n"
        "| nope | 0 of 1 | 0 of 1 | 0 of 1 |\n"
        "| rope | 2 of 3 (p 1, Holm 1) | 0 of 3 (p 1, Holm 1) | 3 of 3 (p 0.25, Holm 0.75) |\n");
  o.against.clear();
  CHECK_THROWS_WITH(results_table(results, o), Catch::Contains("--holm applies to tables with --against only"));
  o.holm = false;
  o.against = "sba";
  CHECK_THROWS_WITH(results_table(results, o), Catch::Contains("--against 'sba' is not a row of the table"));
  o.passing = false;
  o.against = "nope";
  CHECK_THROWS_WITH(results_table(results, o), Catch::Contains("--against applies to --passing and --first-step tables only"));
}

TEST_CASE("table --at-step: each run's evaluation at that step, from its curve file", "[runner]") {
  const std::string dir = pathbench::testing::fresh_temp_dir("table_at_step");
  auto eval_line = [](int64_t step, double in_dist) {
    return json{{"step", step}, {"eval", splits(in_dist, 0.5, 0.5)}}.dump() + "\n";
  };
  json long_run = result("rope", 0, 1, splits(0.01, 0.4, 0.0));
  long_run["path"] = dir + "/long.json";
  long_run["curve"] = "long.curve.jsonl";
  long_run["steps_done"] = 3000;
  long_run["config"]["training"] = {{"eval_every", 1000}, {"steps", 3000}};
  write_file_atomically(dir + "/long.curve.jsonl", json{{"step", 100}, {"loss", 1.0}}.dump() + "\n" + eval_line(1000, 0.4) +
                                                       eval_line(2000, 0.25) + eval_line(3000, 0.01));
  json stopped = result("rope", 1, 1, splits(0.05, 0.4, 0.0));  // stopped early at step 1000
  stopped["path"] = dir + "/stopped.json";
  stopped["curve"] = "stopped.curve.jsonl";
  stopped["steps_done"] = 1000;
  stopped["config"]["training"] = long_run["config"]["training"];
  std::vector<json> results = {long_run, stopped};
  use_metrics_at_step(results, 2000);
  CHECK(results[0]["metrics"]["in_dist"]["error_rate"] == 0.25);
  CHECK(results[1]["metrics"]["in_dist"]["error_rate"] == 0.05);  // ended earlier: keeps its last
  TableOptions o;
  o.split = "in_dist";
  CHECK_THAT(results_table(results, o), Catch::Contains("| rope | 15 ± 14% |"));
  std::vector<json> beyond = results;
  CHECK_THROWS_WITH(use_metrics_at_step(beyond, 5000),
                    Catch::Contains("--at-step 5000: past every run's training (the longest has 3000 steps)"));
  std::vector<json> between = {long_run};
  CHECK_THROWS_WITH(use_metrics_at_step(between, 2500),
                    Catch::Contains("no evaluation at step 2500") && Catch::Contains("every 1000 steps"));
  json failed = long_run;  // not finished: left as it is (tables leave it out)
  failed["status"] = "failed";
  failed["curve"] = "gone.curve.jsonl";
  std::vector<json> unfinished = {failed};
  CHECK_NOTHROW(use_metrics_at_step(unfinished, 2000));
  json no_curve = long_run;
  no_curve["curve"] = "gone.curve.jsonl";
  std::vector<json> missing = {no_curve};
  CHECK_THROWS_WITH(use_metrics_at_step(missing, 2000), Catch::Contains("gone.curve.jsonl") && Catch::Contains("missing"));
}

TEST_CASE("table --first-step: each run's first evaluation step reaching a threshold, from its curve, --against's log-rank test", "[runner]") {
  const std::string dir = pathbench::testing::fresh_temp_dir("table_first_step");
  auto eval_line = [](int64_t step, double in_dist, double sparse) {
    return json{{"step", step}, {"eval", splits(in_dist, sparse, 0.5)}}.dump() + "\n";
  };
  auto with_curve = [&](json r, const std::string& name, const std::string& lines) {
    r["path"] = dir + "/" + name + ".json";
    r["curve"] = name + ".curve.jsonl";
    write_file_atomically(dir + "/" + name + ".curve.jsonl", json{{"step", 100}, {"loss", 1.0}}.dump() + "\n" + lines);
    return r;
  };
  // error_rate, lower is better: in_dist reaches 0.3 at 2000, 3000 and never; sparse at 1000 only
  // in the first run.
  std::vector<json> results = {
      with_curve(result("rope", 0, 1, splits(0.01, 0.1, 0.5)), "a",
                 eval_line(1000, 0.4, 0.1) + eval_line(2000, 0.25, 0.4) + eval_line(3000, 0.01, 0.1)),
      with_curve(result("rope", 1, 1, splits(0.2, 0.4, 0.5)), "b",
                 eval_line(1000, 0.5, 0.5) + eval_line(2000, 0.4, 0.5) + eval_line(3000, 0.2, 0.4)),
      with_curve(result("rope", 2, 1, splits(0.35, 0.4, 0.5)), "c", eval_line(1000, 0.35, 0.4))};
  const json results_copy = results[0];
  use_first_step_reaching(results, "", 0.3);
  CHECK(results[0]["metrics"]["in_dist"]["first_step"] == 2000);
  CHECK(results[0]["metrics"]["sparse"]["first_step"] == 1000);  // the first time, though it rose again
  CHECK(results[1]["metrics"]["sparse"]["first_step"].is_null());
  CHECK(results[2]["metrics"]["in_dist"]["first_step"].is_null());
  CHECK(results[0]["primary_metric"] == "first_step");
  TableOptions o;
  o.split = "in_dist";
  o.per_seed = true;
  CHECK_THAT(results_table(results, o),
             Catch::Contains("| rope | 2000 / 3000 / · |") &&  // whole numbers
                 Catch::Contains("(·: never reached the value, or no result for that seed)"));
  o.per_seed = false;
  CHECK_THAT(results_table(results, o), Catch::Contains("| rope | 2500 ± 707 |"));  // the runs that reached it
  CHECK(results[0]["metrics"]["in_dist"]["evaluated_to"] == 3000);
  CHECK(results[2]["metrics"]["in_dist"]["evaluated_to"] == 1000);

  // --against: the log-rank test. nope's two runs reach 0.3 at step 1000; rope's at 2000 and 3000,
  // and its third is still short at 1000 (censored). At step 1000, 5 runs at risk (rope 3, nope 2)
  // and both events nope's: O − E = 0 − 2·3/5 for rope, variance 2·(3/5)(2/5)(3/4) = 0.36; the later
  // events have no nope run at risk. χ² = 1.44 / 0.36 = 4, p = 0.0455.
  std::vector<json> both = {
      with_curve(result("nope", 0, 1, splits(0.01, 0.1, 0.5)), "n0", eval_line(1000, 0.2, 0.1)),
      with_curve(result("nope", 1, 1, splits(0.01, 0.1, 0.5)), "n1", eval_line(1000, 0.1, 0.1))};
  use_first_step_reaching(both, "", 0.3);
  both.insert(both.end(), results.begin(), results.end());
  o.against = "nope";
  const std::string tested = results_table(both, o);
  CHECK_THAT(tested, Catch::Contains("| rope | 2500 ± 707 (p 0.046) |") && Catch::Contains("| nope | 1000 ± 0 |") &&
                         Catch::Contains("log-rank test (two-sided) of the row's first steps against row nope's"));
  o.holm = true;  // one comparison: Holm leaves it as it is
  CHECK_THAT(results_table(both, o), Catch::Contains("| rope | 2500 ± 707 (p 0.046, Holm 0.046) |"));
  o.holm = false;
  // A row where no run reached the value: "—", and still tested. At step 1000, 4 runs at risk (sba 2,
  // nope 2) and both events nope's: O − E = 0 − 1 for sba, variance 2·(1/2)(1/2)(2/3) = 1/3, χ² = 3,
  // p = 0.083; sba's runs are censored at 3000.
  std::vector<json> never = {
      with_curve(result("sba", 0, 1, splits(0.5, 0.5, 0.5)), "s0",
                 eval_line(1000, 0.5, 0.5) + eval_line(3000, 0.4, 0.5)),
      with_curve(result("sba", 1, 1, splits(0.5, 0.5, 0.5)), "s1",
                 eval_line(1000, 0.5, 0.5) + eval_line(3000, 0.4, 0.5))};
  use_first_step_reaching(never, "", 0.3);
  std::vector<json> with_never = both;
  with_never.insert(with_never.end(), never.begin(), never.end());
  CHECK_THAT(results_table(with_never, o), Catch::Contains("| sba | — (p 0.083) |"));
  o.against.clear();
  CHECK_THAT(results_table(never, o), Catch::Contains("| sba | — |"));  // no run reached it at all: a table still
  o.against = "nope";
  o.per_seed = true;
  CHECK_THROWS_WITH(results_table(both, o), Catch::Contains("--against does not combine with --per-seed or --fewest"));
  o.per_seed = false;
  o.against.clear();
  std::vector<json> other = {results_copy};
  CHECK_THROWS_WITH(use_first_step_reaching(other, "bogus", 0.3),
                    Catch::Contains("metric 'bogus' is not in the evaluations") && Catch::Contains("error_rate"));
  std::vector<json> no_curve = {result("rope", 0, 1, splits(0.01, 0.1, 0.5))};
  no_curve[0]["path"] = dir + "/none.json";
  no_curve[0]["curve"] = "none.curve.jsonl";
  CHECK_THROWS_WITH(use_first_step_reaching(no_curve, "", 0.3), Catch::Contains("none.curve.jsonl") && Catch::Contains("missing"));
}

TEST_CASE("table: an interrupted run is left out and listed, and counts where --at-step or --first-step read its curve", "[runner]") {
  const std::string dir = pathbench::testing::fresh_temp_dir("table_interrupted");
  auto eval_line = [](int64_t step, double in_dist) {
    return json{{"step", step}, {"eval", splits(in_dist, 0.5, 0.5)}}.dump() + "\n";
  };
  auto with_curve = [&](json r, const std::string& name, int64_t steps_done, const std::string& lines) {
    r["path"] = dir + "/" + name + ".json";
    r["curve"] = name + ".curve.jsonl";
    r["steps_done"] = steps_done;
    r["config"]["training"] = {{"eval_every", 1000}};
    write_file_atomically(dir + "/" + name + ".curve.jsonl", json{{"step", 100}, {"loss", 1.0}}.dump() + "\n" + lines);
    return r;
  };
  // A finished run (stopped early at step 1000 below 0.3), one interrupted at step 2500 after two
  // evaluations, and one interrupted at step 500, before its first.
  const std::vector<json> results = {
      with_curve(result("rope", 0, 1, splits(0.05, 0.4, 0.0)), "done", 1000, eval_line(1000, 0.05)),
      with_curve(result("rope", 1, 1, json::object(), "interrupted"), "late", 2500,
                 eval_line(1000, 0.4) + eval_line(2000, 0.2)),
      with_curve(result("rope", 2, 1, json::object(), "interrupted"), "early", 500, "")};
  TableOptions o;
  o.split = "in_dist";
  const std::string final_only = results_table(results, o);
  CHECK_THAT(final_only, Catch::Contains("| rope | 5% |") &&
                             Catch::Contains("Left out: 2 runs with status interrupted (--at-step reads them where they got to): rope-s1-") &&
                             Catch::Contains("rope-s2-"));

  std::vector<json> at_2000 = results;
  CHECK(use_metrics_at_step(at_2000, 2000) == 1);  // the late one; the early one stopped before it
  CHECK(at_2000[1]["metrics"]["in_dist"]["error_rate"] == 0.2);
  CHECK(at_2000[2]["metrics"] == json::object());
  const std::string at_step = results_table(at_2000, o);
  CHECK_THAT(at_step, Catch::Contains("| rope | 12.5 ± 11% |") &&
                          Catch::Contains("Left out: 1 run with status interrupted (--at-step reads them where they got to): rope-s2-"));
  std::vector<json> at_3000 = results;
  CHECK(use_metrics_at_step(at_3000, 3000) == 0);  // both interrupted runs stopped before it

  std::vector<json> first = results;
  use_first_step_reaching(first, "", 0.3);
  CHECK(first[1]["metrics"]["in_dist"]["first_step"] == 2000);
  CHECK(first[2]["metrics"] == json::object());  // no evaluation yet: left out
  o.per_seed = true;
  CHECK_THAT(results_table(first, o), Catch::Contains("| rope | 1000 / 2000 |"));
}
