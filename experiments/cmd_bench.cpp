// `pathbench bench`: times training steps and evaluation batches (the forward, loss and argmax a
// run's evaluation does; `--phase` picks one) of a standard model per encoding after warm-up, on
// the CPU or the GPU (`--device cuda`: the flip-flop model, 1 layer, 2 heads, width 128, GELU MLP,
// batch 64 × 512 tokens and evaluation batches of 256, bf16, the step captured in a CUDA graph, then
// the attention kernels' forward and forward+backward medians at the anchor shapes as
// `bench-attention` times them), prints tables and writes JSON (tokens/s, ms/step, on the GPU also
// the device's own time per step (CUDA events around the step's work: the rest of a step is the
// host's) and the host's batch preparation per step, device, precision, build flags, git state).
#include <fmt/format.h>
#include <omp.h>

#include "build_info.h"
#include "core/attention/registry.h"
#include "core/device.h"
#include "core/error.h"
#include "experiments/attention_bench.h"
#include "experiments/cli_checks.h"
#include "experiments/commands.h"
#include "experiments/file_output.h"
#include "experiments/run_metadata.h"
#include "experiments/step_timing.h"

namespace pathbench {

namespace {

struct BenchOptions {
  std::string device = "cpu";
  std::vector<std::string> encodings;
  StepBenchShape shape;
  std::string precision = "fp32";
  bool cuda_graph = true;
  bool attention = true;  // cuda: also time the attention kernels at the anchor shapes
  int warmup = 3, steps = 10, threads = 0;
  int64_t eval_batch = 0;  // sequences per timed evaluation batch (0: the training batch)
  std::string phase = "both";  // what to time: training steps, evaluation batches or both
  std::string out = "bench-cpu.json";
};

// The GPU defaults: the flip-flop model and batch of docs/design.md §7, as the PyTorch + fla pipeline ran it.
void apply_cuda_defaults(BenchOptions& o, const CLI::App& cmd) {
  auto unset = [&](const char* flag) { return cmd.count(flag) == 0; };
  if (unset("--layers")) o.shape.layers = 1;
  if (unset("--heads")) o.shape.heads = 2;
  if (unset("--length")) o.shape.length = 512;
  if (unset("--batch")) o.shape.batch = 64;
  if (unset("--eval-batch")) o.eval_batch = 256;  // configs/flipflop.json's eval_batch_size
  if (unset("--mlp")) o.shape.mlp = "gelu";
  if (unset("--precision")) o.precision = "bf16";
  if (unset("--warmup")) o.warmup = 5;
  if (unset("--steps")) o.steps = 50;
  if (unset("--out")) o.out = "bench-cuda.json";
}

BackendOptions backend_options(const BenchOptions& o) {
  BackendOptions b;
  b.device = o.device;
  if (!parse_precision(o.precision, b.precision))
    throw Error(fmt::format("bench: unknown precision '{}' (fp32, tf32, bf16)", o.precision));
  b.cuda_graph = o.cuda_graph;
  return b;
}

json bench_encoding(const BenchOptions& o, const std::string& encoding) {
  json r{{"encoding", encoding}};
  if (o.phase != "evaluation") {
    const StepTiming t = time_training_steps(o.shape, encoding, o.warmup, o.steps, backend_options(o));
    r["ms_per_step_median"] = t.median_ms;
    r["ms_per_step_min"] = t.min_ms;
    r["ms_per_step_max"] = t.max_ms;
    if (t.device_median_ms >= 0) r["device_ms_per_step_median"] = t.device_median_ms;
    if (t.prepare_median_ms >= 0) r["host_prepare_ms_per_step_median"] = t.prepare_median_ms;
    r["tokens_per_s"] = double(o.shape.batch * o.shape.length) / (t.median_ms / 1000.0);
    r["parameters"] = t.parameters;
    r["final_loss"] = t.final_loss;
  }
  if (o.phase != "training") {
    const StepTiming e =
        time_evaluation_batches(o.shape, encoding, o.eval_batch, o.warmup, o.steps, backend_options(o));
    r["eval_ms_per_batch_median"] = e.median_ms;
    r["eval_tokens_per_s"] = double(o.eval_batch * o.shape.length) / (e.median_ms / 1000.0);
  }
  return r;
}

// A timing of a bench result as the table shows it, "—" where its phase was not timed.
std::string cell(const json& r, const char* key, int decimals) {
  return r.contains(key) ? fmt::format("{:.{}f}", r[key].get<double>(), decimals) : "—";
}

void run_bench(const BenchOptions& o) {
  if (o.threads > 0) omp_set_num_threads(o.threads);
  std::vector<std::string> encodings = o.encodings.empty() ? encoding_names() : o.encodings;
  for (const auto& e : encodings) find_encoding(e);  // fail before any timing on an unknown name
  check_device_available(o.device);
  const json git = source_git_state();  // before timing: a bad PATHBENCH_GIT_COMMIT fails at once
  const bool gpu = o.device == "cuda";
  const std::string where = gpu ? cuda_device_description() : cpu_description();
  const StepBenchShape& m = o.shape;
  json results = json::array();
  // the batch of each timed phase: training steps, evaluation batches or both
  const std::string batches =
      o.phase == "training"     ? fmt::format("batch {}", m.batch)
      : o.phase == "evaluation" ? fmt::format("evaluation batch {}", o.eval_batch)
                                : fmt::format("batch {} (evaluation {})", m.batch, o.eval_batch);
  fmt::print("pathbench bench --device {} ({}): {} layers, width {}, {} heads, {} MLP, T {}, {}, vocab {}, {}\n",
             o.device, where, m.layers, m.width, m.heads, m.mlp, m.length, batches, m.vocab,
             gpu ? fmt::format("{}, CUDA graph {}", o.precision, o.cuda_graph ? "on" : "off")
                 : fmt::format("{} threads", omp_get_max_threads()));
  // the GPU's table adds the device's own time per step (the rest of a step is the host's)
  fmt::print("| encoding | ms/step (median) | {}tokens/s | evaluation ms/batch (median) | evaluation tokens/s |\n"
             "|---|---|{}---|---|---|\n",
             gpu ? "device ms/step (median) | " : "", gpu ? "---|" : "");
  for (const auto& e : encodings) {
    json r = bench_encoding(o, e);
    const std::string device_cell = gpu ? cell(r, "device_ms_per_step_median", 3) + " | " : "";
    fmt::print("| {} | {} | {}{} | {} | {} |\n", e, cell(r, "ms_per_step_median", 2), device_cell,
               cell(r, "tokens_per_s", 0), cell(r, "eval_ms_per_batch_median", 2), cell(r, "eval_tokens_per_s", 0));
    std::fflush(stdout);
    results.push_back(r);
  }
  json doc{{"device", o.device},
           {gpu ? "gpu" : "cpu", where},
           {"threads", omp_get_max_threads()},
           {"build_flags", PATHBENCH_BUILD_FLAGS},
           {"git", git},
           {"model", {{"layers", m.layers}, {"width", m.width}, {"heads", m.heads}, {"mlp", m.mlp}, {"vocab", m.vocab}}},
           {"batch", m.batch},
           {"eval_batch", o.eval_batch},
           {"phase", o.phase},
           {"length", m.length},
           {"warmup_steps", o.warmup},
           {"timed_steps", o.steps},
           {"results", results}};
  if (gpu) {
    doc["precision"] = o.precision;
    doc["cuda_graph"] = o.cuda_graph;
    if (o.attention) {
      fmt::print("\n");
      doc["attention"] = time_attention_kernels(AttentionBenchOptions{});
    }
  }
  write_file_atomically(o.out, doc.dump(2) + "\n");
  fmt::print("wrote {}\n", o.out);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto opts = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "time training steps and evaluation batches of the standard model per encoding (cuda: the flip-flop "
               "model); write JSON");
  cmd->add_option("--device", opts->device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--encodings", opts->encodings, "encodings to time (default: all registered)");
  cmd->add_option("--layers", opts->shape.layers, "model layers (cpu 2, cuda 1)")->check(integer_at_least(1));
  cmd->add_option("--width", opts->shape.width, "model width")->check(integer_at_least(1));
  cmd->add_option("--heads", opts->shape.heads, "attention heads (cpu 4, cuda 2)")->check(integer_at_least(1));
  cmd->add_option("--mlp", opts->shape.mlp, "MLP kind (cpu swiglu, cuda gelu)")->check(CLI::IsMember({"swiglu", "gelu"}));
  cmd->add_option("--length", opts->shape.length, "sequence length T (cpu 256, cuda 512)")->check(integer_at_least(1));
  cmd->add_option("--batch", opts->shape.batch, "batch size (cpu 16, cuda 64)")->check(integer_at_least(1));
  cmd->add_option("--eval-batch", opts->eval_batch,
                  "sequences per timed evaluation batch (cpu: the batch size, cuda 256, as configs/flipflop.json)")
      ->check(integer_at_least(1));
  cmd->add_option("--phase", opts->phase,
                  "what to time: training (steps), evaluation (batches) or both (default); a profiler sees only "
                  "that phase's kernels")
      ->check(CLI::IsMember({"training", "evaluation", "both"}));
  cmd->add_option("--precision", opts->precision, "cuda: fp32, tf32 or bf16 (default bf16); cpu: fp32")
      ->check(CLI::IsMember(precision_names()));
  cmd->add_option("--cuda-graph", opts->cuda_graph, "cuda: capture the training step in a CUDA graph (default true)");
  cmd->add_option("--attention", opts->attention,
                  "cuda: also time the attention kernels at the anchor shapes, as bench-attention does (default true)");
  cmd->add_option("--warmup", opts->warmup, "untimed warm-up steps (cpu 3, cuda 5)")->check(integer_at_least(0));
  cmd->add_option("--steps", opts->steps, "timed steps, and as many evaluation batches (cpu 10, cuda 50)")
      ->check(integer_at_least(1));
  cmd->add_option("--threads", opts->threads, "CPU threads (default: OpenMP's default)")->check(integer_at_least(0));
  cmd->add_option("--out", opts->out, "JSON output file (default bench-<device>.json)");
  cmd->callback([opts, cmd]() {
    BenchOptions o = *opts;
    if (o.device == "cuda") apply_cuda_defaults(o, *cmd);
    if (o.eval_batch == 0) o.eval_batch = o.shape.batch;
    if (o.device == "cpu" && cmd->count("--attention") > 0 && o.attention)
      throw Error("bench: --attention times the CUDA attention kernels; it needs --device cuda");
    run_bench(o);
  });
}

}  // namespace pathbench
