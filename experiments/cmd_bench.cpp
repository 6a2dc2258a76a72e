// `pathbench bench`: times training steps of the standard CPU model per encoding after warm-up,
// prints a table and writes JSON (tokens/s, ms/step, threads, build flags).
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <fstream>

#include "build_info.h"
#include "core/attention/registry.h"
#include "core/device.h"
#include "core/error.h"
#include "core/optim/trainer.h"
#include "core/rng.h"
#include "experiments/cli_checks.h"
#include "experiments/commands.h"
#include "experiments/file_output.h"

namespace pathbench {

namespace {

struct BenchOptions {
  std::string device = "cpu";
  std::vector<std::string> encodings;
  int64_t layers = 2, width = 128, heads = 4, length = 256, batch = 16, vocab = 8;
  int warmup = 3, steps = 10, threads = 0;
  std::string out = "bench-cpu.json";
};

// Random tokens; the target of each position is the next token (timing does not depend on data).
TokenBatch random_batch(int64_t batch, int64_t length, int64_t vocab, uint64_t seed) {
  TokenBatch b;
  b.batch = batch;
  b.length = length;
  CounterRng rng(seed, "bench-batch");
  std::vector<int32_t> seq(batch * (length + 1));
  for (auto& t : seq) t = int32_t(rng.below(vocab));
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t t = 0; t < length; ++t) {
      b.tokens.push_back(seq[i * (length + 1) + t]);
      b.targets.push_back(seq[i * (length + 1) + t + 1]);
    }
  b.weights.assign(batch * length, 1.0f);
  return b;
}

json bench_encoding(const BenchOptions& o, const std::string& encoding) {
  ModelConfig mc;
  mc.vocab_size = o.vocab;
  mc.n_layers = o.layers;
  mc.d_model = o.width;
  mc.n_heads = o.heads;
  mc.encoding = encoding;
  mc = ModelConfig::from_json(mc.to_json(), "bench model");
  Transformer<float> model(mc);
  model.init_parameters(1);
  Trainer<float> trainer(model, AdamWConfig{}, LrSchedule{1e-3, 0, 1000, 0.1}, 1.0);
  TokenBatch batch = random_batch(o.batch, o.length, o.vocab, 7);
  std::vector<double> ms;
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    auto t0 = std::chrono::steady_clock::now();
    trainer.step(batch);
    auto t1 = std::chrono::steady_clock::now();
    if (s >= o.warmup) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  const double tokens_per_s = double(o.batch * o.length) / (median / 1000.0);
  return json{{"encoding", encoding}, {"ms_per_step_median", median}, {"ms_per_step_min", ms.front()},
              {"ms_per_step_max", ms.back()}, {"tokens_per_s", tokens_per_s}, {"parameters", model.params().count()}};
}

void run_bench(const BenchOptions& o) {
  if (o.device != "cpu")
    throw Error(fmt::format("bench: --device {} is not available in this build (use cpu)", o.device));
  if (o.threads > 0) omp_set_num_threads(o.threads);
  std::vector<std::string> encodings = o.encodings.empty() ? encoding_names() : o.encodings;
  for (const auto& e : encodings) find_encoding(e);  // fail before any timing on an unknown name
  json results = json::array();
  fmt::print("pathbench bench --device cpu: {} layers, width {}, {} heads, T {}, batch {}, vocab {}, {} threads\n",
             o.layers, o.width, o.heads, o.length, o.batch, o.vocab, omp_get_max_threads());
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
           {"model", {{"layers", o.layers}, {"width", o.width}, {"heads", o.heads}, {"vocab", o.vocab}}},
           {"batch", o.batch},
           {"length", o.length},
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
  cmd->add_option("--layers", opts->layers, "model layers")->check(integer_at_least(1));
  cmd->add_option("--width", opts->width, "model width")->check(integer_at_least(1));
  cmd->add_option("--heads", opts->heads, "attention heads")->check(integer_at_least(1));
  cmd->add_option("--length", opts->length, "sequence length T")->check(integer_at_least(1));
  cmd->add_option("--batch", opts->batch, "batch size")->check(integer_at_least(1));
  cmd->add_option("--warmup", opts->warmup, "untimed warm-up steps")->check(integer_at_least(0));
  cmd->add_option("--steps", opts->steps, "timed steps")->check(integer_at_least(1));
  cmd->add_option("--threads", opts->threads, "CPU threads (default: OpenMP's default)")->check(integer_at_least(0));
  cmd->add_option("--out", opts->out, "JSON output file");
  cmd->callback([opts]() { run_bench(*opts); });
}

}  // namespace pathbench
