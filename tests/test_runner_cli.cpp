// The command line around the runner: --help of every subcommand, the generated config reference
// against the committed docs, run/table/slurm through their CLI, the Slurm script, the plots and the
// attention benchmark's table script.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "build_info.h"
#include "core/attention/registry.h"
#include "core/device.h"
#include "core/error.h"
#include "experiments/checkpoint.h"
#include "experiments/commands.h"
#include "experiments/config_reference.h"
#include "experiments/file_output.h"
#include "experiments/process.h"
#include "experiments/result_file.h"
#include "experiments/run_metadata.h"
#include "experiments/slurm_script.h"
#include "experiments/sweep_runner.h"
#include "tests/runner_fixture.h"

using namespace pathbench;
using namespace pathbench::testing;
namespace fs = std::filesystem;

TEST_CASE("every subcommand has a description and --help", "[runner]") {
  CLI::App app{"pathbench"};
  add_commands(app);
  const auto subcommands = app.get_subcommands([](CLI::App*) { return true; });
  REQUIRE(subcommands.size() >= 6);
  for (CLI::App* sub : subcommands) {
    INFO(sub->get_name());
    CHECK_FALSE(sub->get_description().empty());
    CHECK_THROWS_AS(cli({sub->get_name(), "--help"}), CLI::CallForHelp);
  }
}

TEST_CASE("docs/config-reference.md is the generated reference", "[runner]") {
  const std::string committed = read_file(std::string(PATHBENCH_SOURCE_DIR) + "/docs/config-reference.md");
  const std::string reference = config_reference_markdown();
  // Report the first line that differs rather than both documents.
  std::istringstream a(committed), b(reference);
  std::string line_a, line_b;
  int line = 0;
  while (true) {
    const bool more_a = bool(std::getline(a, line_a)), more_b = bool(std::getline(b, line_b));
    ++line;
    if (!more_a && !more_b) break;
    INFO("regenerate it: ./build/pathbench config-reference > docs/config-reference.md");
    INFO("first difference at line " << line);
    REQUIRE(line_a == line_b);
  }
  CHECK(committed == reference);
  for (const char* key : {"`warmup_steps`", "`checkpoint_every`", "`encoding_options`", "`grid`", "`zip`", "--set"})
    CHECK_THAT(reference, Catch::Contains(key));
}

TEST_CASE("the README's encoding table lists every registered encoding and its options", "[runner]") {
  std::istringstream readme(read_file(std::string(PATHBENCH_SOURCE_DIR) + "/README.md"));
  std::map<std::string, std::string> rows;  // encoding → its table row
  bool in_section = false;
  for (std::string line; std::getline(readme, line);) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Position encodings";
    if (in_section && line.rfind("| `", 0) == 0) rows[line.substr(3, line.find('`', 3) - 3)] = line;
  }
  const std::vector<std::string> names = encoding_names();
  CHECK(std::set<std::string>(names.begin(), names.end()) == [&] {
    std::set<std::string> listed;
    for (const auto& [name, row] : rows) listed.insert(name);
    return listed;
  }());
  for (const auto& [name, row] : rows) {
    INFO(row);
    // An option cell is a list of `option` (default) entries, or "the options of `a` and `b`".
    const std::string options_cell = row.substr(row.rfind(" | ") + 3);
    std::set<std::string> listed, registered;
    for (const auto& spec : find_encoding(name).options) registered.insert(spec.key);
    for (size_t at = options_cell.find('`'); at != std::string::npos; at = options_cell.find('`', at + 1)) {
      const size_t end = options_cell.find('`', at + 1);
      listed.insert(options_cell.substr(at + 1, end - at - 1));
      at = end;
    }
    if (options_cell.rfind("the options of", 0) == 0) {
      std::set<std::string> inherited;
      for (const auto& other : listed)
        for (const auto& spec : find_encoding(other).options) inherited.insert(spec.key);
      CHECK(inherited == registered);
    } else {
      CHECK(listed == registered);
    }
  }
}

TEST_CASE("every committed config is valid", "[runner]") {
  size_t configs = 0;
  for (const auto& e : fs::recursive_directory_iterator(std::string(PATHBENCH_SOURCE_DIR) + "/configs")) {
    if (e.path().extension() != ".json") continue;
    INFO(e.path().string());
    ++configs;
    const auto runs = plan_runs(load_config_file(e.path().string()), {}, e.path().string(), registry_task_provider());
    CHECK(runs.size() >= 6);
  }
  CHECK(configs >= 5);
  // The demo is a CPU head-to-head of every registered encoding.
  const std::string demo = std::string(PATHBENCH_SOURCE_DIR) + "/configs/demo.json";
  std::set<std::string> encodings;
  for (const auto& r : plan_runs(load_config_file(demo), {}, demo, registry_task_provider())) {
    CHECK(r.config.device == "cpu");
    encodings.insert(r.config.model.encoding);
  }
  const std::vector<std::string> registered = encoding_names();
  CHECK(encodings == std::set<std::string>(registered.begin(), registered.end()));
}

TEST_CASE("run, table and slurm through the command line", "[runner]") {
  const std::string dir = fresh_temp_dir("cli");
  const std::string config = dir + "/flip.json";
  write_file_atomically(config, R"({"model": {"n_layers": 1, "d_model": 16, "n_heads": 2},
    "task": {"name": "flipflop", "length": 16}, "training": {"steps": 2, "batch_size": 2, "eval_examples": 4},
    "grid": {"seed": [0, 1]}, "threads": 1})");
  cli({"run", config, "--dry-run", "--out", dir + "/results"});
  CHECK_FALSE(fs::exists(dir + "/results"));
  cli({"run", config, "--out", dir + "/results", "--set", "training.log_every=1", "--shard", "1/2"});
  CHECK(load_results(dir + "/results").size() == 1);
  CHECK(load_results(dir + "/results")[0]["seed"] == 1);
  // The run left its evaluation examples' held-out starts for later runs: a file per split.
  size_t starts_files = 0;
  for (const auto& e : fs::directory_iterator(dir + "/results/.held-out-starts"))
    starts_files += e.path().extension() == ".starts" ? 1 : 0;
  CHECK(starts_files == load_results(dir + "/results")[0]["eval_splits"].size());
  cli({"table", dir + "/results", "--rows", "seed", "--out", dir + "/table.md"});
  CHECK_THAT(read_file(dir + "/table.md"), Catch::Contains("| seed \\ split |") && Catch::Contains("| 1 |"));
  cli({"table", dir + "/results", "--rows", "seed", "--metric", "final_train_loss", "--out", dir + "/loss.md"});
  CHECK_THAT(read_file(dir + "/loss.md"), Catch::Contains("| seed \\ split | run |"));
  CHECK_THROWS_WITH(cli({"table", dir + "/results", "--metric", "final_train_loss", "--at-step", "1"}),
                    Catch::Contains("field of the whole run"));
  CHECK_THROWS_WITH(cli({"table", dir + "/results", "--first-step", "50"}),
                    Catch::Contains("--first-step 50: metric") && Catch::Contains("a fraction from 0 to 1"));
  CHECK_THROWS_WITH(cli({"table", dir + "/results", "--first-step", "0.5", "--passing"}),
                    Catch::Contains("--first-step does not combine with --passing"));
  // Several folders read as one, each result once even where folders overlap.
  cli({"run", config, "--out", dir + "/more", "--shard", "0/2"});
  cli({"table", dir + "/results", dir + "/more", dir + "/results", "--rows", "seed", "--out",
       dir + "/both.md"});
  CHECK_THAT(read_file(dir + "/both.md"), Catch::Contains("| 0 |") && Catch::Contains("| 1 |"));
  cli({"table", dir + "/results", dir + "/results", "--out", dir + "/twice.md"});
  CHECK_THAT(read_file(dir + "/twice.md"), Catch::Contains("n = 1 per cell"));
  cli({"table", dir + "/results", dir + "/more", "--rows", "seed", "--seeds", "0", "--out", dir + "/seed0.md"});
  CHECK_THAT(read_file(dir + "/seed0.md"), Catch::Contains("| 0 |") && !Catch::Contains("| 1 |"));
  CHECK_THROWS_WITH(cli({"table", dir + "/results", "--seeds", "7,8"}), Catch::Contains("--seeds 7,8: no result"));
  cli({"table", dir + "/results", "--rows", "seed", "--seeds", "1,7", "--out", dir + "/seed07.md"});
  CHECK_THAT(read_file(dir + "/seed07.md"),
             Catch::Contains("(--seeds: no result of seed 7)") && Catch::Contains("| 1 |"));
  cli({"slurm", config, "--out", dir + "/job.sbatch", "--results", dir + "/results", "--set", "training.steps=3"});
  CHECK_THAT(read_file(dir + "/job.sbatch"), Catch::Contains("#SBATCH --array=0-1") &&
                                                 Catch::Contains("--set training.steps=3"));
  // Errors name the file and key, and nothing runs.
  CHECK_THROWS_WITH(cli({"run", config, "--set", "training.stpes=3", "--out", dir + "/bad"}),
                    Catch::Contains(config + " with --set training.stpes=3") && Catch::Contains("stpes"));
  CHECK_FALSE(fs::exists(dir + "/bad"));
  // A result file given where a config belongs is named as one, before anything runs.
  std::string result_file;
  for (const auto& e : fs::directory_iterator(dir + "/results"))
    if (e.path().extension() == ".json") result_file = e.path().string();
  REQUIRE_FALSE(result_file.empty());
  for (const char* command : {"run", "slurm"})
    CHECK_THROWS_WITH(cli({command, result_file, "--out", dir + "/from-result"}),
                      Catch::Contains(result_file + ": a run's result, not a config"));
  CHECK_FALSE(fs::exists(dir + "/from-result"));
  CHECK_THROWS_WITH(cli({"run", config, "--shard", "2/2"}), Catch::Contains("--shard"));
  CHECK_THROWS_WITH(cli({"table", dir + "/nothing"}), Catch::Contains("not a folder"));
  CHECK_THROWS_WITH(cli({"table", dir + "/results", dir + "/nothing"}),
                    Catch::Contains("'" + dir + "/nothing' is not a folder"));
  CHECK_NOTHROW(cli({"fisher", "4/6", "2/6"}));
  for (const char* bad : {"4/", "/6", "7/6", "4/0", "-1/6", "4x6", "4/6x"})
    CHECK_THROWS_WITH(cli({"fisher", bad, "2/6"}), Catch::Contains(std::string("count '") + bad + "'"));
  CHECK_NOTHROW(cli({"power", "--rates", "0.25,0.75", "--seeds", "8"}));
  CHECK_THROWS_WITH(cli({"power", "--rates", "0.25"}), Catch::Contains("--rates: give two pass rates"));
  CHECK_THROWS_WITH(cli({"power", "--rates", "0.25,1.5"}), Catch::Contains("1.5 is not a rate"));
  CHECK_THROWS_WITH(cli({"power", "--rates", "0.2,0.5", "--seeds", "0"}), Catch::Contains("--seeds: 0 is not"));
  CHECK_THROWS_WITH(cli({"power", "--rates", "0.2,0.5", "--alpha", "2"}), Catch::Contains("--alpha"));
}

TEST_CASE("bench writes one timing per encoding and the source's git state", "[runner]") {
  const std::string dir = fresh_temp_dir("bench");
  const std::vector<std::string> small = {"--device", "cpu",     "--layers", "1", "--width", "8", "--heads",
                                          "2",        "--length", "8",        "--batch", "2", "--warmup", "0",
                                          "--steps",  "1",        "--threads", "1"};
  auto bench = [&](std::vector<std::string> args) {
    args.insert(args.begin(), small.begin(), small.end());
    args.insert(args.begin(), "bench");
    cli(args);
  };
  bench({"--encodings", "nope", "path", "--out", dir + "/bench.json"});
  const json doc = json::parse(read_file(dir + "/bench.json"));
  CHECK(doc["git"] == source_git_state());
  REQUIRE(doc["results"].size() == 2);
  CHECK(doc["results"][1]["encoding"] == "path");
  CHECK(doc["results"][1]["tokens_per_s"].get<double>() > 0);
  CHECK(doc["eval_batch"] == 2);  // the training batch, where --eval-batch is not given
  CHECK(doc["results"][1]["eval_ms_per_batch_median"].get<double>() > 0);
  CHECK(doc["results"][1]["eval_tokens_per_s"].get<double>() > 0);
  bench({"--encodings", "nope", "--eval-batch", "5", "--out", dir + "/eval.json"});
  CHECK(json::parse(read_file(dir + "/eval.json"))["eval_batch"] == 5);
  // --phase times one phase only (so that a profiler sees only its kernels), and says which.
  bench({"--encodings", "nope", "--phase", "training", "--out", dir + "/training.json"});
  const json training = json::parse(read_file(dir + "/training.json"));
  CHECK(training["phase"] == "training");
  CHECK(training["results"][0]["ms_per_step_median"].get<double>() > 0);
  CHECK_FALSE(training["results"][0].contains("eval_ms_per_batch_median"));
  CHECK_FALSE(training["results"][0].contains("device_ms_per_step_median"));  // a CPU step is all host
  CHECK_FALSE(training["results"][0].contains("host_prepare_ms_per_step_median"));
  bench({"--encodings", "nope", "--phase", "evaluation", "--out", dir + "/evaluation.json"});
  const json evaluation = json::parse(read_file(dir + "/evaluation.json"));
  CHECK(evaluation["results"][0]["eval_ms_per_batch_median"].get<double>() > 0);
  CHECK_FALSE(evaluation["results"][0].contains("ms_per_step_median"));
  CHECK_THROWS_WITH(bench({"--phase", "warmup", "--out", dir + "/bad.json"}), Catch::Contains("--phase"));
  CHECK_THROWS_WITH(bench({"--eval-batch", "0", "--out", dir + "/bad.json"}), Catch::Contains("--eval-batch"));
  CHECK_THROWS_WITH(bench({"--encodings", "nosuch", "--out", dir + "/bad.json"}), Catch::Contains("nosuch"));
  CHECK_THROWS_WITH(bench({"--attention", "true", "--out", dir + "/bad.json"}), Catch::Contains("--device cuda"));
  CHECK_FALSE(fs::exists(dir + "/bad.json"));
}

TEST_CASE("the binary stops on a malformed, missing or invalid config with one line and writes nothing", "[runner]") {
  const std::string dir = fresh_temp_dir("bad-config-binary");
  write_file_atomically(dir + "/broken.json", R"({"model": {"n_layers": 1,)");
  write_file_atomically(dir + "/invalid.json", R"({"model": {"n_layers": 0}, "task": {"name": "flipflop"}})");
  struct Case {
    std::string config, names;  // the config file, and what its error line must name
  };
  for (const Case& c : {Case{dir + "/broken.json", "broken.json"}, Case{dir + "/missing.json", "missing.json"},
                        Case{dir + "/invalid.json", "n_layers"}}) {
    INFO(c.config);
    const std::string out = dir + "/out-" + fs::path(c.config).stem().string();
    // stderr joined to the captured stdout: everything the user sees
    const ProcessResult r = run_process(
        {"/bin/sh", "-c", std::string("'") + PATHBENCH_PROGRAM + "' run '" + c.config + "' --out '" + out + "' 2>&1"},
        true);
    CHECK(r.exit_code != 0);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    CHECK_THAT(r.output, Catch::Contains(c.names));
    CHECK_FALSE(fs::exists(out));
  }
}

TEST_CASE("the binary stopped by SIGTERM or SIGINT ends its runs gracefully and exits with 128 + the signal",
          "[runner]") {
  const std::string dir = fresh_temp_dir("stop-binary");
  write_file_atomically(dir + "/long.json", R"({"model": {"n_layers": 1, "d_model": 16, "n_heads": 2},
    "task": {"name": "flipflop", "length": 16}, "training": {"steps": 1000000, "batch_size": 2, "log_every": 1,
    "eval_examples": 4, "checkpoint_every": 100000}, "threads": 1})");
  for (auto [name, signal] : {std::pair{"TERM", SIGTERM}, std::pair{"INT", SIGINT}}) {
    INFO(name);
    const std::string out = dir + "/out-" + name;
    // started in the background; the signal once its curve has a line (it is training), then its status
    const std::string script =
        std::string("'") + PATHBENCH_PROGRAM + "' run '" + dir + "/long.json' --out '" + out +
        "' > /dev/null 2>&1 & pid=$!; for i in $(seq 600); do [ -s \"$(ls '" + out +
        "'/*.curve.jsonl 2>/dev/null | head -1)\" ] && break; sleep 0.05; done; kill -" + name +
        " $pid; wait $pid; echo $?";
    const ProcessResult r = run_process({"/bin/sh", "-c", script}, true);
    REQUIRE(r.exit_code == 0);
    CHECK(std::stoi(r.output) == 128 + signal);
    const std::vector<json> results = load_results(out);
    REQUIRE(results.size() == 1);
    CHECK(results[0]["status"] == "interrupted");
  }
}

TEST_CASE("a cuda run with a head dimension the GPU kernels lack is rejected before anything runs", "[runner]") {
  // Checked from the config alone, so builds without CUDA reject it too.
  const std::string dir = fresh_temp_dir("cuda-head-dim");
  const std::string config = dir + "/wide.json";
  write_file_atomically(config, R"({"model": {"n_layers": 1, "d_model": 192, "n_heads": 4},
    "task": {"name": "flipflop", "length": 16}, "training": {"steps": 2, "batch_size": 2}, "device": "cuda"})");
  const std::string message = config + ": model: keys 'd_model' 192 / 'n_heads' 4 give head dimension 48, but "
                              "device 'cuda' supports head dimensions 16, 32, 64 or 128 only";
  CHECK_THROWS_WITH(cli({"run", config, "--dry-run", "--out", dir + "/results"}), message);
  CHECK_THROWS_WITH(cli({"run", config, "--out", dir + "/results"}), message);
  CHECK_FALSE(fs::exists(dir + "/results"));
  // The same shape on the CPU, or at head dimension 64 on the GPU, passes validation.
  cli({"run", config, "--dry-run", "--set", "device=cpu", "--out", dir + "/results"});
  cli({"run", config, "--dry-run", "--set", "model.n_heads=3", "--out", dir + "/results"});
  CHECK_FALSE(fs::exists(dir + "/results"));
}

TEST_CASE("the Slurm script runs shard i/n in array task i", "[runner]") {
  SlurmOptions o;
  o.pathbench = "/opt/pathbench/build/pathbench";
  o.config = "/home/me/configs/flip flop.json";
  o.results = "/scratch/results/flip";
  o.workdir = "/home/me";
  o.sets = {"model.encoding=path", "optimizer.lr=3e-3"};
  o.runs = 30;
  o.shards = 8;
  o.gpus_per_task = 1;
  o.partition = "gpu";
  const std::string s = slurm_script(o);
  CHECK(s.rfind("#!/bin/bash\n", 0) == 0);
  for (const char* line : {"#SBATCH --array=0-7\n", "#SBATCH --gpus-per-task=1\n", "#SBATCH --partition=\"gpu\"\n",
                           "#SBATCH --output=\"/scratch/results/flip/slurm-%A_%a.out\"\n", "cd /home/me\n"})
    CHECK_THAT(s, Catch::Contains(line));
  CHECK_THAT(s, Catch::Contains("exec /opt/pathbench/build/pathbench run '/home/me/configs/flip flop.json' --out "
                                "/scratch/results/flip --shard \"${SLURM_ARRAY_TASK_ID}/8\"") &&
                    Catch::Contains("--set model.encoding=path --set optimizer.lr=3e-3"));
  CHECK_THAT(s, !Catch::Contains("--mem"));
  o.shards = 0;  // one task per run
  CHECK_THAT(slurm_script(o), Catch::Contains("--array=0-29\n") && Catch::Contains("/30\""));
  o.shards = 100;  // never more tasks than runs
  CHECK_THAT(slurm_script(o), Catch::Contains("--array=0-29\n"));
  CHECK(shell_quote("it's") == "'it'\\''s'");
  o.job_name = "x\n#SBATCH --exclusive";
  CHECK_THROWS_WITH(slurm_script(o), Catch::Contains("--job-name") && Catch::Contains("control characters"));
  CHECK(shell_quote("") == "''");
  o.job_name = "flip flop";  // values with spaces stay whole, quoted; a % of the folder is not a pattern
  o.results = "/scratch/100% done";
  CHECK_THAT(slurm_script(o), Catch::Contains("#SBATCH --job-name=\"flip flop\"\n") &&
                                  Catch::Contains("#SBATCH --output=\"/scratch/100%% done/slurm-%A_%a.out\"\n"));
  o.results = "/scratch/say \"hi\"";
  CHECK_THROWS_WITH(slurm_script(o), Catch::Contains("--results") && Catch::Contains("double quote"));
  o.results = "/scratch/back\\slash";
  CHECK_THROWS_WITH(slurm_script(o), Catch::Contains("--results") && Catch::Contains("backslash"));
  o.results = "/scratch/results/flip";
  o.partition = "gpu \"a\"";
  CHECK_THROWS_WITH(slurm_script(o), Catch::Contains("--partition") && Catch::Contains("double quote"));
}

TEST_CASE("plots: every figure with its CSV from a results folder", "[runner][plots]") {
  const std::string dir = fresh_temp_dir("plots");
  json doc = tiny_run_config();
  doc["grid"] = json{{"model.encoding", {"nope", "rope"}}, {"model.n_layers", {1, 2}}, {"seed", {0, 1}}};
  SweepOptions options;
  options.out_dir = dir + "/results";
  options.config_file = "cfg.json";
  options.tasks = fixture_tasks();
  SweepProgress quiet(nullptr, SweepProgress::Mode::Quiet);
  REQUIRE(run_sweep(plan_runs(doc, {}, "cfg.json", fixture_tasks()), options, quiet).done == 8);

  // The interpreters `pathbench plot` tries, in its order; scripts/install-deps.sh installs
  // matplotlib, so a machine without it fails here rather than passing unchecked.
  std::string python;
  const char* chosen = std::getenv("PATHBENCH_PYTHON");
  for (const char* candidate : {chosen ? chosen : "", "python3", "/usr/bin/python3"})
    if (python.empty() && *candidate && run_process({candidate, "-c", "import matplotlib"}, true).exit_code == 0)
      python = candidate;
  if (python.empty())
    FAIL("no Python with matplotlib (PATHBENCH_PYTHON, python3, /usr/bin/python3): run scripts/install-deps.sh");
  const std::string plots = std::string(PATHBENCH_SOURCE_DIR) + "/plots";
  REQUIRE(run_process({python, plots + "/plot_all.py", dir + "/results", "--out", dir + "/plots"}, true).exit_code ==
          0);
  // The scripts' examples (e.g. the curve mean holding an early-stopped run's last value, the
  // training length behind the fewest-layers figure's shading).
  for (const char* module :
       {"plot_curves.py", "plot_fewest_layers.py", "plot_passing.py", "plot_axis.py", "results.py"})
    CHECK(run_process({python, "-m", "doctest", plots + "/" + module}, true).exit_code == 0);
  std::vector<std::string> pngs;
  for (const auto& e : fs::directory_iterator(dir + "/plots"))
    if (e.path().extension() == ".png") pngs.push_back(e.path().stem().string());
  std::sort(pngs.begin(), pngs.end());
  CHECK(pngs == std::vector<std::string>{"curves-parity-n_layers=1", "curves-parity-n_layers=2",
                                         "fewest-layers-parity", "lengths-parity-n_layers=1",
                                         "lengths-parity-n_layers=2", "passing-parity-n_layers=1",
                                         "passing-parity-n_layers=2", "splits-parity-n_layers=1",
                                         "splits-parity-n_layers=2", "sweep-n_layers-parity"});
  for (const auto& stem : pngs) {
    INFO(stem);
    const std::string csv = read_file(dir + "/plots/" + stem + ".csv");
    CHECK(std::count(csv.begin(), csv.end(), '\n') >= 3);
    CHECK(csv.rfind("encoding,", 0) == 0);
  }
  // The splits figures carry every seed's value ("seed:value", seed order) beside the mean.
  CHECK_THAT(read_file(dir + "/plots/splits-parity-n_layers=1.csv"),
             Catch::Contains("encoding,split,metric,mean,std,n,seeds") && Catch::Matches(R"([\s\S]*,0:[0-9.e-]+ 1:[0-9.e-]+\s[\s\S]*)"));
  CHECK_THAT(read_file(dir + "/plots/fewest-layers-parity.csv"),
             Catch::Contains("encoding,length,metric,threshold,fewest_layers,beyond_training"));
  const std::string sweep = read_file(dir + "/plots/sweep-n_layers-parity.csv");
  CHECK_THAT(sweep, Catch::Contains("encoding,split,n_layers,metric,mean,std,n"));
  CHECK(std::count(sweep.begin(), sweep.end(), '\n') == 1 + 2 * 2 * 2);  // header, 2 encodings × 2 depths × 2 splits

  // Several folders read as one: seed 1's runs moved to a second folder give the same figures.
  fs::create_directories(dir + "/seed1");
  for (const auto& e : fs::directory_iterator(dir + "/results"))
    if (e.path().filename().string().find("-s1-") != std::string::npos)
      fs::rename(e.path(), dir + "/seed1/" + e.path().filename().string());
  CHECK_THROWS_WITH(cli({"plot", dir + "/results", dir + "/seed1"}), Catch::Contains("--out"));
  cli({"plot", dir + "/results", dir + "/seed1", "--out", dir + "/plots2"});
  for (const auto& stem : pngs) {
    INFO(stem);
    CHECK(read_file(dir + "/plots2/" + stem + ".csv") == read_file(dir + "/plots/" + stem + ".csv"));
  }

  // A run interrupted by a signal (its result says so, with no metrics): the figures of final
  // metrics leave it out, the curve figures count it up to where its curve stops.
  for (const auto& e : fs::directory_iterator(dir + "/seed1")) {
    const std::string name = e.path().filename().string();
    if (name.find("-nope-L1-") == std::string::npos || e.path().extension() != ".json") continue;
    json r = json::parse(read_file(e.path().string()));
    r["status"] = "interrupted";
    r["metrics"] = json::object();
    write_file_atomically(e.path().string(), r.dump());
  }
  cli({"plot", dir + "/results", dir + "/seed1", "--out", dir + "/plots3"});
  const std::string splits = read_file(dir + "/plots3/splits-parity-n_layers=1.csv");
  CHECK_THAT(splits, Catch::Matches(R"([\s\S]*\nnope,[^\n]*,1,0:[0-9.e-]+\r?\n[\s\S]*)"));  // seed 0 only
  // (rows: encoding, step, seeds, share) both nope seeds counted
  CHECK_THAT(read_file(dir + "/plots3/passing-parity-n_layers=1.csv"),
             Catch::Matches(R"([\s\S]*\nnope,[0-9]+,2,[\s\S]*)") && !Catch::Matches(R"([\s\S]*\nnope,[0-9]+,1,[\s\S]*)"));
  CHECK(read_file(dir + "/plots3/curves-parity-n_layers=1.csv") == read_file(dir + "/plots/curves-parity-n_layers=1.csv"));
}

TEST_CASE("a failed write names its reason, and sample refuses a negative seed", "[runner]") {
  const std::string dir = fresh_temp_dir("cli-write");
  fs::create_directories(dir + "/taken");
  CHECK_THROWS_WITH(write_file_atomically(dir + "/taken", "x"), Catch::Contains("cannot write") &&
                                                                     !Catch::Contains("Success"));
  CHECK(fs::is_directory(dir + "/taken"));
  CHECK_THROWS_WITH(cli({"sample", R"({"name": "flipflop"})", "--seed", "-1"}), Catch::Contains("--seed"));
}

TEST_CASE("sample takes a run config, and generate reads a run's checkpoint in the task's symbols", "[runner]") {
  const std::string dir = fresh_temp_dir("cli-generate");
  const std::string config = dir + "/flip.json";
  write_file_atomically(config, R"({"name": "named", "model": {"n_layers": 1, "d_model": 16, "n_heads": 2},
    "task": {"name": "flipflop", "length": 16}, "training": {"steps": 2, "batch_size": 2, "eval_examples": 4,
    "checkpoint_every": 2}, "threads": 1})");
  // A run config with a top-level name: its task block is the task (not a task named "named").
  CHECK_NOTHROW(cli({"sample", config, "--count", "1"}));
  CHECK_NOTHROW(cli({"sample", std::string(PATHBENCH_SOURCE_DIR) + "/configs/demo.json", "--count", "1"}));
  cli({"run", config, "--out", dir + "/results"});
  const std::vector<json> results = load_results(dir + "/results");
  REQUIRE(results.size() == 1);
  const std::string checkpoint =
      dir + "/results/" + results[0]["id"].get<std::string>() + "-" + results[0]["hash"].get<std::string>() +
      ".ckpt.safetensors";
  REQUIRE(fs::exists(checkpoint));
  cli({"generate", "--checkpoint", checkpoint, "--prompt", "<bos> w 1 i 0 r", "--new", "2", "--out", dir + "/gen.json"});
  const json generated = json::parse(read_file(dir + "/gen.json"));
  CHECK(generated["prompt_tokens"] == json{5, 0, 4, 2, 3, 1});  // <bos> w 1 i 0 r in flip-flop's vocabulary
  CHECK(generated["generated_tokens"].size() == 2);
  CHECK(generated["generated_text"].is_string());

  // training.save_model: the final model beside the result (named there), without checkpoints too;
  // it generates exactly as the run's last checkpoint does, and it is left out of the run hash.
  cli({"run", config, "--out", dir + "/model", "--set", "training.save_model=true", "--set",
       "training.checkpoint_every=0"});
  const std::vector<json> saved = load_results(dir + "/model");
  REQUIRE(saved.size() == 1);
  CHECK(saved[0]["hash"] == results[0]["hash"]);
  REQUIRE(saved[0]["model"].is_string());
  const std::string model = dir + "/model/" + saved[0]["model"].get<std::string>();
  CHECK_FALSE(fs::exists(dir + "/model/" + saved[0]["id"].get<std::string>() + "-" +
                         saved[0]["hash"].get<std::string>() + ".ckpt.safetensors"));
  cli({"generate", "--checkpoint", model, "--prompt", "<bos> w 1 i 0 r", "--new", "2", "--out", dir + "/gen2.json"});
  CHECK(json::parse(read_file(dir + "/gen2.json"))["generated_tokens"] == generated["generated_tokens"]);
  CHECK(load_checkpoint(model).model->params().values() == load_checkpoint(checkpoint).model->params().values());
  CHECK_FALSE(results[0].contains("model"));
}

TEST_CASE("count-ceiling prints a decision word problem's count-only accuracy per length, or fails", "[runner]") {
  const std::string pilot = std::string(PATHBENCH_SOURCE_DIR) + "/configs/pilots/a5_decision.json";
  const ProcessResult table = run_process({PATHBENCH_PROGRAM, "count-ceiling", pilot, "--lengths", "2", "4"}, true);
  CHECK(table.exit_code == 0);
  // At 2 letters a word is the identity exactly when its letters are a 3-cycle and its inverse.
  CHECK_THAT(table.output, Catch::StartsWith("word_problem A5, generators (0 1 2), (0 2 1), (0 1 3), (0 3 1), "
                                             "(0 1 4), (0 4 1), balanced:") &&
                               Catch::Contains("| length | count-only accuracy |\n|---|---|\n| 2 | 100% |\n| 4 | "));
  // Without --lengths, the split lengths beyond the computation's limits are marked, not refused.
  const std::string split_lengths = R"json({"name": "word_problem", "mode": "decision", "generators": ["(0 1 2)",
      "(0 2 1)", "(0 1 3)", "(0 3 1)", "(0 1 4)", "(0 4 1)"], "eval_splits": {"short": [4], "long": [64]}})json";
  const ProcessResult marked = run_process({PATHBENCH_PROGRAM, "count-ceiling", split_lengths}, true);
  CHECK(marked.exit_code == 0);
  CHECK_THAT(marked.output, Catch::Contains("| 4 | 98% |\n| 64 | — |\n") &&
                                Catch::Contains("—: beyond what this computation takes; the longest such: "
                                                "count-only accuracy at length 64"));
  CHECK_THROWS_WITH(cli({"count-ceiling", split_lengths, "--lengths", "4", "64"}), Catch::Contains("at length 64"));
  const std::string tagging = R"({"name": "word_problem", "mode": "tagging"})", flipflop = R"({"name": "flipflop"})";
  for (const std::string& task : {tagging, flipflop}) {
    INFO(task);
    const ProcessResult refused = run_process({PATHBENCH_PROGRAM, "count-ceiling", task}, true);
    CHECK(refused.exit_code == 1);
    CHECK(refused.output.empty());
  }
  CHECK_THROWS_WITH(cli({"count-ceiling", tagging}), Catch::Contains("decision mode, not mode \"tagging\""));
  CHECK_THROWS_WITH(cli({"count-ceiling", flipflop}), Catch::Contains("not task 'flipflop'"));
}

TEST_CASE("bench-attention --list-shapes prints the shapes it would time, without a GPU", "[runner]") {
  // scripts/bench_sdpa.py takes its default shapes from this listing.
  const ProcessResult anchors = run_process({PATHBENCH_PROGRAM, "bench-attention", "--list-shapes"}, true);
  CHECK(anchors.exit_code == 0);
  CHECK(anchors.output == "8x2048x16x64\n4x4096x16x64\n2x8192x16x64\n4x4096x8x128\n4x4096x64x16\n4x4096x32x32\n");
  const ProcessResult chosen =
      run_process({PATHBENCH_PROGRAM, "bench-attention", "--shapes", "1x64x2x16", "2x128x4x32", "--list-shapes"}, true);
  CHECK(chosen.exit_code == 0);
  CHECK(chosen.output == "1x64x2x16\n2x128x4x32\n");
  const ProcessResult bad_inputs = run_process(  // stderr joined to the captured stdout
      {"/bin/sh", "-c", std::string("'") + PATHBENCH_PROGRAM + "' bench-attention --inputs sharp --list-shapes 2>&1"},
      true);
  CHECK(bad_inputs.exit_code != 0);
  CHECK_THAT(bad_inputs.output, Catch::Contains("--inputs") && Catch::Contains("sharp"));
  // Without a GPU, timing stops with the runner's one-line reason and writes nothing.
  if (!cuda_device_available()) {
    const std::string out = fresh_temp_dir("bench-attention") + "/bench.json";
    CHECK_THROWS_WITH(cli({"bench-attention", "--out", out}),
                      Catch::Contains("device 'cuda'") && !Catch::Contains("cudaGetDeviceProperties"));
    CHECK_FALSE(fs::exists(out));
  }
}

// A Python 3 interpreter for the scripts that need no packages: python3 on PATH, else Debian's.
static std::string any_python() {
  for (const char* candidate : {"python3", "/usr/bin/python3"})
    if (run_process({candidate, "-c", "pass"}, true).exit_code == 0) return candidate;
  FAIL("no python3 on PATH or at /usr/bin/python3");
  return "";
}

TEST_CASE("scripts/attention_table.py tables a benchmark run, with stick-breaking's far-reaching column", "[runner]") {
  const std::string dir = fresh_temp_dir("attention-table");
  auto result = [&](const char* encoding, int length, double forward, double total) {
    return fmt::format(R"({{"encoding": "{}", "batch": 1, "length": {}, "heads": 2, "head_dim": 16, )"
                       R"("forward_ms_median": {}, "forward_backward_ms_median": {}}})",
                       encoding, length, forward, total);
  };
  write_file_atomically(dir + "/a.json",
                        fmt::format(R"({{"inputs": "random", "results": [{}, {}, {}]}})", result("nope", 64, 0.1, 0.5),
                                    result("sba", 64, 0.2, 0.8), result("nope", 128, 0.2, 0.9)));
  // SDPA in two files (a later call timed the shape an earlier one did not reach), one repeating a cell.
  write_file_atomically(dir + "/s.json", fmt::format(R"({{"results": [{}]}})", result("sdpa_flash", 64, 0.1, 0.4)));
  write_file_atomically(dir + "/s2.json", fmt::format(R"({{"results": [{}]}})", result("sdpa_flash", 128, 0.2, 0.6)));
  write_file_atomically(dir + "/f.json", fmt::format(R"({{"inputs": "far-reaching", "results": [{}, {}]}})",
                                                     result("sba", 64, 0.5, 1.6), result("nope", 64, 0.1, 0.5)));
  const std::string python = any_python();
  const std::string script = std::string(PATHBENCH_SOURCE_DIR) + "/scripts/attention_table.py";
  auto table = [&](const std::string& sdpa, const std::string& far) {  // stderr joined to the captured stdout
    return run_process({"/bin/sh", "-c", python + " '" + script + "' '" + dir + "/a.json' " + sdpa +
                                             " --ratio --far-reaching '" + dir + "/" + far + "' 2>&1"},
                       true);
  };
  const std::string both = "'" + dir + "/s.json' '" + dir + "/s2.json'";
  const ProcessResult good = table(both, "f.json");
  CHECK(good.exit_code == 0);
  CHECK_THAT(good.output, Catch::Contains("| B·T·H·D | SDPA | nope | sba | sba far |") &&
                              Catch::Contains("| 1·64·2·16 | 0.40 | 0.50 1.25× | 0.80 2.00× | 1.60 4.00× |") &&
                              Catch::Contains("| 1·128·2·16 | 0.60 | 0.90 1.50× | — | — |"));
  // A run timed with random inputs is refused as the far-reaching column's source.
  const ProcessResult wrong = table(both, "a.json");
  CHECK(wrong.exit_code != 0);
  CHECK_THAT(wrong.output, Catch::Contains("a.json is not a run with --inputs far-reaching"));
  // Two SDPA files timing the same kernel at the same shape leave no way to choose.
  const ProcessResult twice = table("'" + dir + "/s.json' '" + dir + "/s.json'", "f.json");
  CHECK(twice.exit_code != 0);
  CHECK_THAT(twice.output, Catch::Contains("times sdpa_flash at 1·64·2·16 again"));
}

TEST_CASE("scripts/gpu_scoreboard.sh keeps the shapes timed before a failure or the time limit", "[runner]") {
  // Stand-ins on PATH: a pathbench that writes bench-attention JSON and a python3 that answers
  // scripts/bench_sdpa.py with one SDPA result a shape (failing at length 128) and runs the rest with
  // a real interpreter.
  const std::string dir = fresh_temp_dir("gpu-scoreboard"), bin = dir + "/bin";
  // the real interpreter's path, found before the stand-in shadows it
  const ProcessResult found = run_process({"/bin/sh", "-c", "command -v " + any_python()}, true);
  REQUIRE(found.exit_code == 0);
  const std::string real_python = found.output.substr(0, found.output.find('\n'));
  fs::create_directories(bin);
  auto executable = [&](const std::string& name, const std::string& text) {
    write_file_atomically(bin + "/" + name, text);
    fs::permissions(bin + "/" + name, fs::perms::owner_all);
  };
  // result NAME LENGTH MS: one result of a 1·LENGTH·2·16 shape; arg OPTION ARGS…: the value after OPTION
  const std::string helpers = R"sh(
result() { printf '{"encoding": "%s", "batch": 1, "length": %s, "heads": 2, "head_dim": 16, ' "$1" "$2"
           printf '"forward_ms_median": 0.1, "forward_backward_ms_median": %s}' "$3"; }
arg() { want=$1; shift; prev=""; for a in "$@"; do [ "$prev" = "$want" ] && echo "$a"; prev=$a; done; }
)sh";
  executable("pathbench", "#!/bin/sh" + helpers + R"sh(out=$(arg --out "$@")
if [ "$(arg --inputs "$@")" = far-reaching ]; then
  echo "{\"inputs\": \"far-reaching\", \"results\": [$(result sba 64 1.6), $(result sba 128 2.0)]}" > "$out"
else
  echo "{\"inputs\": \"random\", \"results\": [$(result nope 64 0.5), $(result nope 128 0.9)]}" > "$out"
fi
)sh");
  executable("python3", "#!/bin/sh" + helpers + R"sh(if [ "$1" = scripts/bench_sdpa.py ]; then
  [ "$(arg --shapes "$@")" = 1x128x2x16 ] && { echo "CUDA error" >&2; exit 1; }
  echo "{\"results\": [$(result sdpa_flash 64 0.4)]}" > "$(arg --out "$@")"
  exit 0
fi
exec ')sh" + real_python + "' \"$@\"\n");
  auto scoreboard = [&](const std::string& out, int limit) {  // stderr joined to the captured stdout
    const std::string command = "cd '" + std::string(PATHBENCH_SOURCE_DIR) + "' && PATH='" + bin + "':\"$PATH\" OUT='" +
                                out + "' PATHBENCH='" + bin + "/pathbench' SHAPES='1x64x2x16 1x128x2x16' LIMIT=" +
                                std::to_string(limit) + " scripts/gpu_scoreboard.sh 2>&1";
    return run_process({"/bin/sh", "-c", command}, true);
  };
  const ProcessResult good = scoreboard(dir + "/out", 300);
  CHECK(good.exit_code == 0);
  CHECK_THAT(good.output, Catch::Contains("bench_sdpa.py at 1x128x2x16 stopped") &&
                              Catch::Contains("| 1·64·2·16 | 0.40 | 0.50 1.25× | 1.60 4.00× |") &&
                              Catch::Contains("| 1·128·2·16 | — | 0.90 | 2.00 |"));
  CHECK(fs::exists(dir + "/out/score/sdpa-1x64x2x16.json"));
  CHECK_FALSE(fs::exists(dir + "/out/score/sdpa-1x128x2x16.json"));
  // With no time left for SDPA there is no table, and the exit says so.
  const ProcessResult late = scoreboard(dir + "/late", 20);
  CHECK(late.exit_code != 0);
  CHECK_THAT(late.output, Catch::Contains("no time left for SDPA at 1x64x2x16") && Catch::Contains("no table"));
}

TEST_CASE("scripts/kernel_times.py sums each kernel's launches per unit of work from ncu's CSV", "[runner]") {
  const std::string dir = fresh_temp_dir("kernel-times");
  // ncu --csv --page raw: its own lines first, then the header, the units line and one row a launch
  write_file_atomically(dir + "/k.csv", R"csv(==PROF== Connected to process 1
"ID","Kernel Name","gpu__time_duration.sum"
"","","nsecond"
"0","void pathbench::cuda::(anonymous namespace)::path_prep_kernel<float, 64>(Args)","3,000"
"1","void pathbench::cuda::detail::key_major_backward_hopper_kernel<float, 64, false>(Args)","1,000"
"2","void pathbench::cuda::(anonymous namespace)::path_prep_kernel<float, 64>(Args)","1,000"
"3","void pathbench::cuda::detail::key_major_backward_hopper_kernel<float, 64, false>(Args)","3,000"
"4","void pathbench::cuda::detail::key_major_backward_hopper_kernel<float, 64, false>(Args)","2,000"
)csv");
  write_file_atomically(dir + "/bad.csv", "\"ID\",\"Name\"\n");
  const std::string python = any_python();
  const std::string script = std::string(PATHBENCH_SOURCE_DIR) + "/scripts/kernel_times.py";
  auto times = [&](const std::string& file, const std::string& args) {  // stderr joined to the captured stdout
    const std::string command = python + " '" + script + "' '" + dir + "/" + file + "' " + args + " 2>&1";
    return run_process({"/bin/sh", "-c", command}, true);
  };
  const ProcessResult good = times("k.csv", "--units 2 --unit step");
  CHECK(good.exit_code == 0);
  CHECK_THAT(good.output, Catch::Contains("5 launches over 2 × step, 5.0 us of kernel time per step") &&
                              Catch::Contains("      3.0 us  60.0 %  x1.5   key_major_backward_hopper_kernel") &&
                              Catch::Contains("      2.0 us  40.0 %  x1     path_prep_kernel"));
  const ProcessResult bad = times("bad.csv", "");
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.output, Catch::Contains("bad.csv: no 'Kernel Name' column"));
}

TEST_CASE("scripts/compare_bench.py tables two builds' rounds and each encoding's tokens/s against nope's", "[runner]") {
  const std::string dir = fresh_temp_dir("compare-bench");
  // `pathbench bench --device cuda --out` of one round: a step's wall and device medians per encoding
  auto round = [&](const std::string& name, const char* commit, double nope, double nope_device, double path,
                   double path_device) {
    auto result = [](const char* encoding, double ms, double device) {
      return fmt::format(R"({{"encoding": "{}", "ms_per_step_median": {}, "device_ms_per_step_median": {}}})",
                         encoding, ms, device);
    };
    write_file_atomically(dir + "/" + name,
                          fmt::format(R"({{"git": {{"commit": "{}"}}, "results": [{}, {}]}})", commit,
                                      result("nope", nope, nope_device), result("path", path, path_device)));
  };
  round("b1.json", "aaaaaaa111", 0.8, 0.7, 1.6, 1.4);
  round("b2.json", "aaaaaaa111", 1.0, 0.7, 2.0, 1.4);
  round("c1.json", "bbbbbbb222", 0.8, 0.7, 1.0, 0.875);
  write_file_atomically(dir + "/empty.json", R"({"results": []})");
  const std::string python = any_python();
  const std::string script = std::string(PATHBENCH_SOURCE_DIR) + "/scripts/compare_bench.py";
  auto compare = [&](const std::string& base, const std::string& candidate) {  // stderr joined to stdout
    const std::string command = python + " '" + script + "' --base " + base + " --candidate " + candidate + " 2>&1";
    return run_process({"/bin/sh", "-c", "cd '" + dir + "' && " + command}, true);
  };
  const ProcessResult good = compare("b1.json b2.json", "c1.json");
  CHECK(good.exit_code == 0);
  CHECK_THAT(good.output, Catch::Contains("| row | aaaaaaa (base) ms, rounds | bbbbbbb (candidate) ms, rounds | change |") &&
                              Catch::Contains("| path step | 1.600, 2.000 | 1.000 | -44.4 % |") &&
                              Catch::Contains("| path step, device | 1.400, 1.400 | 0.875 | -37.5 % |") &&
                              Catch::Contains("| path step | 0.500, 0.500 | 0.800 |") &&
                              Catch::Contains("| path step, device | 0.500, 0.500 | 0.800 |") &&
                              !Catch::Contains("| nope step | 1.000, 1.000"));
  const ProcessResult empty = compare("empty.json", "c1.json");
  CHECK(empty.exit_code != 0);
  CHECK_THAT(empty.output, Catch::Contains("empty.json holds no results"));
}

TEST_CASE("unreadable result files are named and counted, never silently dropped", "[runner]") {
  const std::string dir = fresh_temp_dir("cli-unreadable");
  const std::string config = dir + "/flip.json";
  write_file_atomically(config, R"({"model": {"n_layers": 1, "d_model": 16, "n_heads": 2},
    "task": {"name": "flipflop", "length": 16}, "training": {"steps": 2, "batch_size": 2, "eval_examples": 4},
    "threads": 1})");
  cli({"run", config, "--out", dir + "/results"});
  write_file_atomically(dir + "/results/truncated.json", R"({"pathbench_result": 1, "status": "do)");
  write_file_atomically(dir + "/results/bad-metrics.json",
                        R"({"pathbench_result": 1, "status": "done", "id": "a", "hash": "b", "config": {}, "metrics": "x"})");
  write_file_atomically(dir + "/results/other.json", R"({"not": "a result"})");
  std::vector<std::string> unreadable;
  CHECK(load_results(dir + "/results", &unreadable).size() == 1);
  REQUIRE(unreadable.size() == 2);
  CHECK_THAT(unreadable[0], Catch::Contains("bad-metrics.json") && Catch::Contains("'metrics'"));
  CHECK_THAT(unreadable[1], Catch::Contains("truncated.json") && Catch::Contains("not valid JSON"));
  cli({"table", dir + "/results", "--out", dir + "/table.md"});
  CHECK_THAT(read_file(dir + "/table.md"), Catch::StartsWith("(2 unreadable result files left out: see stderr)"));
}
