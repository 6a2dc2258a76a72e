// `pathbench bench-attention` and time_attention_kernels (attention_bench.h): times the GPU
// implementation of each registered attention op (core/attention/op_registry.h; forward, and
// forward + backward, with the ops' default settings) at given B·T·H·D shapes with
// device events: warm-up first, then many repeats cycling through several input sets (so repeats do
// not run out of L2), medians reported; prints a table and writes JSON. scripts/bench_sdpa.py times
// PyTorch's SDPA (flash) at the same shapes.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <sstream>

#include "build_info.h"
#include "core/attention/op_registry.h"
#include "core/error.h"
#include "core/optim/training_backend.h"
#include "core/options.h"
#include "experiments/attention_bench.h"
#include "experiments/cli_checks.h"
#include "experiments/commands.h"
#include "experiments/file_output.h"
#include "experiments/median.h"
#include "experiments/run_metadata.h"

#ifdef PATHBENCH_WITH_CUDA
#include <cuda_runtime_api.h>

#include <cmath>

#include "core/attention/cuda/gpu_op.h"
#include "core/cuda/buffer.h"
#include "core/cuda/hopper.h"
#include "core/rng.h"
#endif

namespace pathbench {

namespace {

struct BenchAttentionOptions {
  AttentionBenchOptions timing;
  std::string out = "bench-attention.json";
  bool list_shapes = false;  // print the shapes (the anchors unless --shapes) one per line; time nothing
};

struct BenchShape {
  int64_t batch = 0, length = 0, heads = 0, head_dim = 0;
};

BenchShape parse_shape(const std::string& s) {
  BenchShape b;
  char x1, x2, x3;
  long long v[4];
  std::istringstream in(s);
  if (!(in >> v[0] >> x1 >> v[1] >> x2 >> v[2] >> x3 >> v[3]) || x1 != 'x' || x2 != 'x' || x3 != 'x' || !in.eof() ||
      v[0] <= 0 || v[1] <= 0 || v[2] <= 0 || v[3] <= 0)
    throw Error(fmt::format("bench-attention: --shapes value '{}' is not BxTxHxD with positive integers", s));
  b.batch = v[0], b.length = v[1], b.heads = v[2], b.head_dim = v[3];
  return b;
}

#ifdef PATHBENCH_WITH_CUDA

using cuda::bf16;

void check(cudaError_t e, const char* what) { cuda::check_cuda(e, std::string("bench-attention: ") + what); }

constexpr const char* kInput = "a benchmark input";
constexpr const char* kOutput = "a benchmark output";

// One set of random inputs for every op: q, k, v, w (unit rows), d_o in bf16; β, gates in fp32.
// far_reaching: q and k shifted apart (AttentionBenchOptions::inputs).
struct InputSet {
  cuda::DeviceBuffer<bf16> q, k, v, w, d_o;
  cuda::DeviceBuffer<float> beta, gate;
  InputSet(const BenchShape& s, uint64_t seed, bool far_reaching)
      : q(size(s), kInput), k(size(s), kInput), v(size(s), kInput), w(size(s), kInput), d_o(size(s), kInput),
        beta(rows(s), kInput), gate(rows(s), kInput) {
    const size_t n = size(s), r = rows(s);
    CounterRng rng(seed, "bench-attention");
    std::vector<bf16> h(n);
    const float c = far_reaching ? float(std::sqrt(6.0 / std::sqrt(double(s.head_dim)))) : 0.f;  // s·c²·D = 6
    auto fill = [&](bf16* dst, bool unit_rows, float shift = 0.f) {
      for (size_t i = 0; i < n; ++i) h[i] = bf16(float(2 * rng.uniform() - 1) * 1.7320508f + shift);
      if (unit_rows)
        for (size_t row = 0; row < r; ++row) {
          float norm = 0;
          for (int64_t x = 0; x < s.head_dim; ++x) norm += float(h[row * s.head_dim + x]) * float(h[row * s.head_dim + x]);
          for (int64_t x = 0; x < s.head_dim; ++x)
            h[row * s.head_dim + x] = bf16(float(h[row * s.head_dim + x]) / std::sqrt(norm));
        }
      check(cudaMemcpy(dst, h.data(), n * sizeof(bf16), cudaMemcpyHostToDevice), "upload");
    };
    fill(q.data(), false, c), fill(k.data(), false, -c), fill(v.data(), false), fill(w.data(), true);
    fill(d_o.data(), false);
    std::vector<float> b(r), g(r);
    for (size_t i = 0; i < r; ++i) {
      b[i] = float(2.0 * rng.uniform());
      g[i] = (i % s.length == 0 ? 0.f : g[i - 1]) - float(0.1 * rng.uniform());
    }
    check(cudaMemcpy(beta.data(), b.data(), r * sizeof(float), cudaMemcpyHostToDevice), "upload");
    check(cudaMemcpy(gate.data(), g.data(), r * sizeof(float), cudaMemcpyHostToDevice), "upload");
  }
  static size_t size(const BenchShape& s) { return size_t(s.batch * s.heads * s.length * s.head_dim); }
  static size_t rows(const BenchShape& s) { return size_t(s.batch * s.heads * s.length); }
};

// Outputs and gradients shared by every op at one shape.
struct Outputs {
  cuda::DeviceBuffer<bf16> o, dq, dk, dv, dw;
  cuda::DeviceBuffer<float> dbeta, dgate;
  explicit Outputs(const BenchShape& s)
      : o(InputSet::size(s), kOutput), dq(InputSet::size(s), kOutput), dk(InputSet::size(s), kOutput),
        dv(InputSet::size(s), kOutput), dw(InputSet::size(s), kOutput), dbeta(InputSet::rows(s), kOutput),
        dgate(InputSet::rows(s), kOutput) {}
};

// The registered op's GPU tensors over one input set and the shared outputs.
cuda::GpuOpTensors<bf16> op_tensors(const AttentionOpInfo& op, const BenchShape& s, InputSet& in, Outputs& out) {
  cuda::GpuOpTensors<bf16> t;
  t.batch_heads = s.batch * s.heads, t.length = s.length, t.head_dim = s.head_dim;
  t.scale = 1.f / std::sqrt(float(s.head_dim));
  t.q = in.q.data(), t.k = in.k.data(), t.v = in.v.data(), t.d_o = in.d_o.data();
  t.o = out.o.data(), t.dq = out.dq.data(), t.dk = out.dk.data(), t.dv = out.dv.data();
  if (op.householder) t.w = in.w.data(), t.beta = in.beta.data(), t.dw = out.dw.data(), t.dbeta = out.dbeta.data();
  if (op.gated) t.cum_gate = in.gate.data(), t.d_cum_gate = out.dgate.data();
  return t;
}

json bench_one(const AttentionBenchOptions& o, const std::string& name, const BenchShape& s,
               std::vector<std::unique_ptr<InputSet>>& sets, Outputs& out) {
  const AttentionOpInfo& op = find_attention_op(name);
  if (!op.gpu_bf16) throw Error(fmt::format("bench-attention: op '{}' has no GPU implementation", name));
  const cuda::GpuOp<bf16>& gpu = *op.gpu_bf16;
  OpSettings settings;
  settings.path_span_chunks = o.path_span_chunks;
  const cuda::GpuOpTensors<bf16> shape = op_tensors(op, s, *sets[0], out);
  const size_t forward_bytes = gpu.forward_workspace_bytes(settings, shape);
  const size_t backward_bytes = gpu.backward_workspace_bytes(settings, shape);
  cuda::DeviceBuffer<char> forward_scratch(std::max<size_t>(forward_bytes, 1), "the forward's workspace");
  cuda::DeviceBuffer<char> backward_scratch(std::max<size_t>(backward_bytes, 1), "the backward's workspace");
  const cuda::Workspace fws{forward_scratch.data(), forward_bytes}, bws{backward_scratch.data(), backward_bytes};
  const auto forward = [&](InputSet& in) { gpu.forward(settings, op_tensors(op, s, in, out), fws, nullptr); };
  const auto backward = [&](InputSet& in) { gpu.backward(settings, op_tensors(op, s, in, out), fws, bws, nullptr); };
  for (int i = 0; i < o.warmup; ++i) {
    forward(*sets[i % sets.size()]);
    backward(*sets[i % sets.size()]);
  }
  std::vector<cudaEvent_t> ev(3 * o.repeats);
  for (auto& e : ev) check(cudaEventCreate(&e), "cudaEventCreate");
  for (int r = 0; r < o.repeats; ++r) {
    InputSet& in = *sets[r % sets.size()];
    check(cudaEventRecord(ev[3 * r]), "cudaEventRecord");
    forward(in);
    check(cudaEventRecord(ev[3 * r + 1]), "cudaEventRecord");
    backward(in);
    check(cudaEventRecord(ev[3 * r + 2]), "cudaEventRecord");
  }
  check(cudaDeviceSynchronize(), "running the kernels");
  std::vector<double> fwd, total;
  for (int r = 0; r < o.repeats; ++r) {
    float a = 0, b = 0;
    check(cudaEventElapsedTime(&a, ev[3 * r], ev[3 * r + 1]), "cudaEventElapsedTime");
    check(cudaEventElapsedTime(&b, ev[3 * r], ev[3 * r + 2]), "cudaEventElapsedTime");
    fwd.push_back(a), total.push_back(b);
  }
  for (auto& e : ev) cudaEventDestroy(e);
  return json{{"encoding", name},
              {"batch", s.batch},
              {"length", s.length},
              {"heads", s.heads},
              {"head_dim", s.head_dim},
              {"forward_ms_median", median(fwd)},
              {"forward_ms_min", *std::min_element(fwd.begin(), fwd.end())},
              {"forward_backward_ms_median", median(total)},
              {"forward_backward_ms_min", *std::min_element(total.begin(), total.end())},
              {"workspace_bytes", forward_bytes + backward_bytes}};
}

}  // namespace

json time_attention_kernels(const AttentionBenchOptions& o) {
  std::vector<BenchShape> shapes;
  for (const auto& s : o.shapes) shapes.push_back(parse_shape(s));
  std::vector<std::string> names = o.encodings;
  if (names.empty())
    for (const auto& op : attention_ops())
      if (op.gpu_bf16) names.push_back(op.name);
  for (const auto& e : names) find_attention_op(e);  // fail before any timing on an unknown name
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const cuda::ScopedHopperKernels forms(!o.portable_kernels);
  // "hopper": the Hopper forms where a kernel has one (bf16 at head dims 64 and 128), portable elsewhere.
  const char* kernels = cuda::hopper_kernels() ? "hopper" : "portable";
  fmt::print("pathbench bench-attention on {}: bf16, {} kernels, {} inputs, {} warm-up, {} repeats over {} input sets\n",
             prop.name, kernels, o.inputs, o.warmup, o.repeats, o.sets);
  fmt::print("| encoding | B·T·H·D | forward ms | forward+backward ms |\n|---|---|---|---|\n");
  json results = json::array();
  for (const auto& s : shapes) {
    std::vector<std::unique_ptr<InputSet>> sets;
    for (int i = 0; i < o.sets; ++i) sets.push_back(std::make_unique<InputSet>(s, 1000 + i, o.inputs == "far-reaching"));
    Outputs out(s);
    for (const auto& e : names) {
      json r = bench_one(o, e, s, sets, out);
      fmt::print("| {} | {}·{}·{}·{} | {:.3f} | {:.3f} |\n", e, s.batch, s.length, s.heads, s.head_dim,
                 r["forward_ms_median"].get<double>(), r["forward_backward_ms_median"].get<double>());
      std::fflush(stdout);
      results.push_back(r);
    }
  }
  return json{{"device", prop.name},
              {"precision", "bf16"},
              {"kernels", kernels},
              {"inputs", o.inputs},
              {"warmup", o.warmup},
              {"repeats", o.repeats},
              {"input_sets", o.sets},
              {"path_span_chunks", o.path_span_chunks},
              {"build_flags", PATHBENCH_BUILD_FLAGS},
              {"results", results}};
}

#else

}  // namespace

json time_attention_kernels(const AttentionBenchOptions& o) {
  for (const auto& s : o.shapes) parse_shape(s);
  throw Error("bench-attention: this build has no CUDA backend (configure with -DPATHBENCH_CUDA=ON)");
}

#endif

namespace {

void run_bench_attention(const BenchAttentionOptions& o) {
  if (o.list_shapes) {  // what scripts/bench_sdpa.py times beside us; needs no GPU
    for (const std::string& shape : o.timing.shapes) fmt::print("{}\n", shape);
    return;
  }
  const json git = source_git_state();  // before timing: a bad PATHBENCH_GIT_COMMIT fails at once
  check_device_available("cuda");        // the runner's one-line reason, not the CUDA runtime's
  json doc = time_attention_kernels(o.timing);
  doc["git"] = git;
  write_file_atomically(o.out, doc.dump(2) + "\n");
  fmt::print("wrote {}\n", o.out);
}

}  // namespace

void add_bench_attention_command(CLI::App& app) {
  auto opts = std::make_shared<BenchAttentionOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench-attention", "time the CUDA attention kernels (forward, forward+backward) per encoding and shape; write JSON");
  cmd->add_option("--encodings", opts->timing.encodings,
                  fmt::format("attention ops to time (default: every registered op with a GPU implementation: {})",
                              fmt::join(attention_op_names(), ", ")));
  cmd->add_option("--shapes", opts->timing.shapes, "shapes BxTxHxD (default: the six anchors of docs/design.md §7)");
  cmd->add_option("--warmup", opts->timing.warmup, "untimed forward+backward passes")->check(integer_at_least(0));
  cmd->add_option("--repeats", opts->timing.repeats, "timed passes")->check(integer_at_least(1));
  cmd->add_option("--sets", opts->timing.sets, "input sets cycled through")->check(integer_at_least(1));
  cmd->add_option("--path-span-chunks", opts->timing.path_span_chunks,
                  "chunks per span of PaTH's kernels (0: their own choice, about 0.9·√chunks, even at head dim 128 from 6 up, at least 4 (or all chunks) and chunks/16)")
      ->check(integer_at_least(0));
  cmd->add_flag("--portable-kernels", opts->timing.portable_kernels,
               "time the portable (mma.sync) kernels even on an H100/H200, where the Hopper (wgmma) forms run by default");
  cmd->add_option("--inputs", opts->timing.inputs,
                  "random (s·q·k ≈ N(0, 1): stick-breaking's weights vanish ~110 keys back) or far-reaching "
                  "(q, k shifted apart so that s·q·k ≈ −6: every key block counts)")
      ->check(CLI::IsMember({"random", "far-reaching"}));
  cmd->add_option("--out", opts->out, "JSON output file");
  cmd->add_flag("--list-shapes", opts->list_shapes,
                "print the shapes that would be timed, one BxTxHxD per line, and time nothing (no GPU needed)");
  cmd->callback([opts]() { run_bench_attention(*opts); });
}

}  // namespace pathbench
