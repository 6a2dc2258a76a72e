// `pathbench bench`: times training steps of the standard CPU model per encoding after warm-up,
// prints a table and writes JSON (tokens/s, ms/step, threads, build flags).
#include <fmt/format.h>
#include <omp.h>

#include "build_info.h"
#include "core/attention/registry.h"
#include "core/device.h"
#include "core/error.h"
#include "experiments/cli_checks.h"
#include "experiments/commands.h"
#include "experiments/file_output.h"
#include "experiments/step_timing.h"

namespace pathbench {

namespace {

struct BenchOptions {
  std::string device = "cpu";
  std::vector<std::string> encodings;
  StepBenchShape shape;
  int warmup = 3, steps = 10, threads = 0;
  std::string out = "bench-cpu.json";
};

json bench_encoding(const BenchOptions& o, const std::string& encoding) {
  const StepTiming t = time_training_steps(o.shape, encoding, o.warmup, o.steps);
  const double tokens_per_s = double(o.shape.batch * o.shape.length) / (t.median_ms / 1000.0);
  return json{{"encoding", encoding}, {"ms_per_step_median", t.median_ms}, {"ms_per_step_min", t.min_ms},
              {"ms_per_step_max", t.max_ms}, {"tokens_per_s", tokens_per_s}, {"parameters", t.parameters}};
}

void run_bench(const BenchOptions& o) {
  if (o.device != "cpu")
    throw Error(fmt::format("bench: --device {} is not available in this build (use cpu)", o.device));
  if (o.threads > 0) omp_set_num_threads(o.threads);
  std::vector<std::string> encodings = o.encodings.empty() ? encoding_names() : o.encodings;
  for (const auto& e : encodings) find_encoding(e);  // fail before any timing on an unknown name
  json results = json::array();
  const StepBenchShape& m = o.shape;
  fmt::print("pathbench bench --device cpu: {} layers, width {}, {} heads, T {}, batch {}, vocab {}, {} threads\n",
             m.layers, m.width, m.heads, m.length, m.batch, m.vocab, omp_get_max_threads());
  fmt::print("| encoding | ms/step (median) | tokens/s |\n|---|---|---|\n");
  for (const auto& e : encodings) {
    json r = bench_encoding(o, e);
    fmt::print("| {} | {:.1f} | {:.0f} |\n", e, r["ms_per_step_median"].get<double>(), r["tokens_per_s"].get<double>());
    std::fflush(stdout);
    results.push_back(r);
  }
  json doc{{"device", "cpu"},
           {"cpu", cpu_description()},
           {"threads", omp_get_max_threads()},
           {"build_flags", PATHBENCH_BUILD_FLAGS},
           {"model", {{"layers", m.layers}, {"width", m.width}, {"heads", m.heads}, {"vocab", m.vocab}}},
           {"batch", m.batch},
           {"length", m.length},
           {"warmup_steps", o.warmup},
           {"timed_steps", o.steps},
           {"results", results}};
  write_file_atomically(o.out, doc.dump(2) + "\n");
  fmt::print("wrote {}\n", o.out);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto opts = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "time training steps of the standard model per encoding; write JSON");
  cmd->add_option("--device", opts->device, "cpu (cuda where built with it)")->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--encodings", opts->encodings, "encodings to time (default: all registered)");
  cmd->add_option("--layers", opts->shape.layers, "model layers")->check(integer_at_least(1));
  cmd->add_option("--width", opts->shape.width, "model width")->check(integer_at_least(1));
  cmd->add_option("--heads", opts->shape.heads, "attention heads")->check(integer_at_least(1));
  cmd->add_option("--length", opts->shape.length, "sequence length T")->check(integer_at_least(1));
  cmd->add_option("--batch", opts->shape.batch, "batch size")->check(integer_at_least(1));
  cmd->add_option("--warmup", opts->warmup, "untimed warm-up steps")->check(integer_at_least(0));
  cmd->add_option("--steps", opts->steps, "timed steps")->check(integer_at_least(1));
  cmd->add_option("--threads", opts->threads, "CPU threads (default: OpenMP's default)")->check(integer_at_least(0));
  cmd->add_option("--out", opts->out, "JSON output file");
  cmd->callback([opts]() { run_bench(*opts); });
}

}  // namespace pathbench
