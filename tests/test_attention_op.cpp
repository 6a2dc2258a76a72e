// `pathbench op`: every registered op's output gradients against central finite differences
// through the op itself (float64), a test-only op registered here going through the same path,
// float32 in → float32 out, and bad inputs (missing tensor, wrong shape or dtype, w not unit-norm,
// β out of range, unknown or non-finite tensors, options the op does not take) rejected with one
// error naming the tensor and no output file.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/attention/op_registry.h"
#include "core/error.h"
#include "core/optim/training_backend.h"
#include "experiments/attention_op.h"
#include "experiments/commands.h"
#include "experiments/file_output.h"
#include "encoding_test_support.h"

namespace pathbench {
namespace {

using test::random_normal;

// A test-only op, registered like the built-in ones: causal uniform averaging of the values,
// o_i = (1/i) Σ_{j≤i} v_j, which ignores q and k (their gradients are zero).
struct UniformAverageOp {
  template <typename T>
  static void run(const OpSettings&, const OpTensors<T>& t) {
    const int64_t len = t.length, d = t.head_dim, n = t.batch_heads * len * d;
    std::fill(t.dq, t.dq + n, T(0));
    std::fill(t.dk, t.dk + n, T(0));
    for (int64_t s = 0; s < t.batch_heads; ++s)
      for (int64_t e = 0; e < d; ++e) {
        T sum = 0, grad = 0;
        for (int64_t i = 0; i < len; ++i) {
          sum += t.v[(s * len + i) * d + e];
          t.o[(s * len + i) * d + e] = sum / T(i + 1);
        }
        for (int64_t j = len - 1; j >= 0; --j) {  // dv_j = Σ_{i≥j} do_i / (i + 1)
          grad += t.d_o[(s * len + j) * d + e] / T(j + 1);
          t.dv[(s * len + j) * d + e] = grad;
        }
      }
  }
};

const AttentionOpRegistration kUniformAverage(
    make_attention_op<UniformAverageOp>("test_uniform", "causal uniform average (test only)", false, false, {}));

// Random inputs for `op`: shape [2, 3, T, D] (+ w, beta, g as the op needs).
SafetensorsContent op_input(const std::string& name, int64_t len, int64_t d, uint64_t seed) {
  const AttentionOpInfo& op = find_attention_op(name);
  const std::vector<int64_t> full = {2, 3, len, d}, per_token = {2, 3, len};
  const int64_t rows = 6 * len;
  SafetensorsContent in;
  for (const char* name : {"q", "k", "v", "do"}) {
    auto x = random_normal(rows * d, seed, name);
    in.tensors[name] = make_tensor(x.data(), full);
  }
  if (op.householder) {
    auto w = test::random_unit_rows(rows, d, seed, "w");
    auto beta = test::random_uniform(rows, 0.1, 1.9, seed, "beta");
    in.tensors["w"] = make_tensor(w.data(), full);
    in.tensors["beta"] = make_tensor(beta.data(), per_token);
  }
  if (op.gated) {
    auto g = test::random_uniform(rows, -0.5, 0.0, seed, "g");
    in.tensors["g"] = make_tensor(g.data(), per_token);
  }
  return in;
}

// Parses (and so runs) `pathbench op ARGS...`.
void op_command(std::vector<std::string> args) {
  CLI::App app;
  add_op_command(app);
  args.insert(args.begin(), {"pathbench", "op"});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  app.parse(int(argv.size()), argv.data());
}

std::vector<double> values(const SafetensorsContent& c, const std::string& name) {
  return tensor_values<double>(c.tensors.at(name), name);
}

TEST_CASE("op: every input gradient matches finite differences through the op", "[encodings]") {
  test::SingleThread single;
  const std::vector<std::string> names = attention_op_names();
  REQUIRE(std::count(names.begin(), names.end(), "test_uniform") == 1);  // the registered test op is checked too
  for (const auto& op : names) {
    INFO(op);
    AttentionOpOptions options;
    options.op = op;
    options.settings.gate_scale = 0.7;
    options.settings.remainder_to_current = true;
    SafetensorsContent in = op_input(op, 5, 4, 31);
    const SafetensorsContent out = evaluate_attention_op(options, in, "test");
    const std::vector<double> d_o = values(in, "do");
    for (const auto& [name, tensor] : in.tensors) {
      if (name == "do") continue;
      CHECK(out.tensors.at("d" + name).shape == tensor.shape);
      std::vector<double> x = values(in, name);
      auto loss = [&] {
        SafetensorsContent perturbed = in;
        perturbed.tensors[name] = make_tensor(x.data(), tensor.shape);
        return test::dot(values(evaluate_attention_op(options, perturbed, "test"), "o"), d_o);
      };
      // w must stay unit-norm through the op's check: its gradient is checked along the sphere below.
      if (name != "w") test::check_gradient(x, values(out, "d" + name), loss, "d" + name, 12);
    }
    if (!find_attention_op(op).householder) continue;
    // dw along directions that keep every row of w on the unit sphere: moving row i to
    // normalize(w_i + h·t_i) with t_i ⊥ w_i changes the loss by h·Σ_i dw_i·t_i to first order.
    const std::vector<double> w = values(in, "w"), dw = values(out, "dw");
    const std::vector<int64_t> shape = in.tensors.at("w").shape;
    const int64_t d = shape.back(), rows = int64_t(w.size()) / d;
    for (uint64_t trial = 0; trial < 3; ++trial) {
      INFO("dw along the sphere, direction " << trial);
      std::vector<double> t = random_normal(w.size(), 40 + trial, "tangent");
      double predicted = 0;
      for (int64_t i = 0; i < rows; ++i) {
        double along = 0;
        for (int64_t c = 0; c < d; ++c) along += t[i * d + c] * w[i * d + c];
        for (int64_t c = 0; c < d; ++c) t[i * d + c] -= along * w[i * d + c];
        for (int64_t c = 0; c < d; ++c) predicted += dw[i * d + c] * t[i * d + c];
      }
      auto loss_at = [&](double h) {
        std::vector<double> moved(w.size());
        for (int64_t i = 0; i < rows; ++i) {
          double norm = 0;
          for (int64_t c = 0; c < d; ++c) norm += std::pow(w[i * d + c] + h * t[i * d + c], 2);
          for (int64_t c = 0; c < d; ++c) moved[i * d + c] = (w[i * d + c] + h * t[i * d + c]) / std::sqrt(norm);
        }
        SafetensorsContent perturbed = in;
        perturbed.tensors["w"] = make_tensor(moved.data(), shape);
        return test::dot(values(evaluate_attention_op(options, perturbed, "test"), "o"), d_o);
      };
      const double h = 1e-6, measured = (loss_at(h) - loss_at(-h)) / (2 * h);
      CHECK(measured == Approx(predicted).epsilon(1e-6).margin(1e-9));
    }
  }
}

TEST_CASE("op: float32 inputs give float32 outputs close to float64", "[encodings]") {
  AttentionOpOptions options;
  options.op = "path_fox";
  SafetensorsContent in64 = op_input("path_fox", 9, 8, 32), in32;
  for (const auto& [name, t] : in64.tensors) {
    auto x = values(in64, name);
    std::vector<float> f(x.begin(), x.end());
    in32.tensors[name] = make_tensor(f.data(), t.shape);
  }
  const SafetensorsContent out64 = evaluate_attention_op(options, in64, "test");
  const SafetensorsContent out32 = evaluate_attention_op(options, in32, "test");
  for (const auto& [name, t] : out32.tensors) {
    INFO(name);
    CHECK(t.dtype == "F32");
    CHECK(test::max_abs_diff(values(out32, name), values(out64, name)) < 1e-4);
  }
}

TEST_CASE("op: bad inputs give one error naming the tensor", "[encodings]") {
  AttentionOpOptions options;
  options.op = "path_fox";
  const SafetensorsContent good = op_input("path_fox", 4, 3, 33);
  auto expect_error = [&](SafetensorsContent in, const std::string& text) {
    INFO(text);
    CHECK_THROWS_WITH(evaluate_attention_op(options, in, "in.safetensors"),
                      Catch::StartsWith("in.safetensors: tensor ") && Catch::Contains(text));
  };
  SafetensorsContent in = good;
  in.tensors.erase("beta");
  expect_error(in, "'beta' is missing");
  in = good;
  auto k = values(good, "k");
  in.tensors["k"] = make_tensor(k.data(), {2, 3, 6, 2});
  expect_error(in, "'k' has shape [2, 3, 6, 2], expected [2, 3, 4, 3]");
  in = good;
  auto g = values(good, "g");
  in.tensors["g"] = make_tensor(g.data(), {6, 4});
  expect_error(in, "'g' has shape [6, 4], expected [2, 3, 4]");
  in = good;
  in.tensors["v"].dtype = "I64";
  expect_error(in, "'v' has dtype I64");
  in = good;
  auto v = values(good, "v");
  std::vector<float> v32(v.begin(), v.end());
  in.tensors["v"] = make_tensor(v32.data(), {2, 3, 4, 3});
  expect_error(in, "'v' has dtype F32 but 'q' has F64");
  in = good;
  auto w = values(good, "w");
  w[5] *= 1.5;
  in.tensors["w"] = make_tensor(w.data(), {2, 3, 4, 3});
  expect_error(in, "'w' row 1 has norm");
  // A model's recorded call says its w rows were stored in bf16: norms within its rounding pass.
  w = values(good, "w");
  w[3] *= 1.004, w[4] *= 1.004, w[5] *= 1.004;
  in.tensors["w"] = make_tensor(w.data(), {2, 3, 4, 3});
  expect_error(in, "'w' row 1 has norm");
  in.metadata["w_precision"] = "bf16";
  CHECK_NOTHROW(evaluate_attention_op(options, in, "in.safetensors"));
  w[5] *= 1.5;
  in.tensors["w"] = make_tensor(w.data(), {2, 3, 4, 3});
  expect_error(in, "'w' row 1 has norm");
  in.metadata["w_precision"] = "fp16";
  CHECK_THROWS_WITH(evaluate_attention_op(options, in, "in.safetensors"),
                    Catch::Contains("metadata w_precision is 'fp16'"));
  in = good;
  auto beta = values(good, "beta");
  beta[2] = 2.5;
  in.tensors["beta"] = make_tensor(beta.data(), {2, 3, 4});
  expect_error(in, "'beta' has value 2.5 at flat index 2");
  in = good;
  auto q = values(good, "q");
  q[7] = std::nan("");
  in.tensors["q"] = make_tensor(q.data(), {2, 3, 4, 3});
  expect_error(in, "'q' has a non-finite value at flat index 7");
  in = good;
  in.tensors["bias"] = good.tensors.at("g");
  expect_error(in, "'bias' is not an input of op path_fox");
  in = good;
  in.tensors["q"] = make_tensor(q.data(), {72});
  expect_error(in, "'q' has shape [72]; expected [..., T, D]");
}

TEST_CASE("op command: output file on success, none on a bad input", "[encodings]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("pathbench_op_test_{}", ::getpid());
  fs::create_directories(dir);
  const std::string input = (dir / "in.safetensors").string(), output = (dir / "out.safetensors").string();
  auto run = [&](const std::string& op, std::vector<std::string> options = {}) {
    std::vector<std::string> args = {"--op", op, "--input", input, "--output", output};
    args.insert(args.end(), options.begin(), options.end());
    op_command(args);
  };
  write_file_atomically(input, serialize_safetensors(op_input("path", 3, 4, 34)));
  run("path");
  const SafetensorsContent out = parse_safetensors(read_file(output), output);
  CHECK(out.tensors.count("dbeta") == 1);
  CHECK(out.metadata.at("op") == "path");
  fs::remove(output);
  CHECK_THROWS_WITH(run("path_fox"), Catch::Contains("tensor 'g' is missing"));
  CHECK_FALSE(fs::exists(output));
  // Non-finite options, and options the op does not use, are errors; nothing is written.
  CHECK_THROWS(run("path", {"--scale", "nan"}));
  CHECK_THROWS(run("path", {"--scale", "-1"}));
  CHECK_THROWS_WITH(run("path", {"--gate-scale", "2"}), Catch::Contains("--gate-scale applies to fox, path_fox only"));
  CHECK_THROWS_WITH(run("path", {"--rope-base", "500"}), Catch::Contains("--rope-base applies to rope only"));
  CHECK_THROWS_WITH(run("path", {"--remainder-to-current"}), Catch::Contains("applies to sba only"));
  CHECK_THROWS_WITH(run("path", {"--precision", "bf16"}), Catch::Contains("--precision applies to --device cuda only"));
  bool gpu = true;
  try {
    check_device_available("cuda");
  } catch (const Error&) {
    gpu = false;
  }
  if (!gpu) CHECK_THROWS_WITH(run("path", {"--device", "cuda"}), Catch::Contains("cuda"));
  CHECK_FALSE(fs::exists(output));
  // The test-only op goes through the command like a built-in one.
  write_file_atomically(input, serialize_safetensors(op_input("test_uniform", 3, 4, 35)));
  run("test_uniform");
  CHECK(parse_safetensors(read_file(output), output).metadata.at("op") == "test_uniform");
  CHECK_THROWS_WITH(run("test_uniform", {"--rope-base", "500"}), Catch::Contains("--rope-base applies to rope only"));
  fs::remove_all(dir);
}

TEST_CASE("op command: a recorded call's metadata gives the op and its settings", "[encodings]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("pathbench_op_recorded_{}", ::getpid());
  fs::create_directories(dir);
  const std::string input = (dir / "in.safetensors").string(), output = (dir / "out.safetensors").string();
  auto run = [&](std::vector<std::string> options) {
    std::vector<std::string> args = {"--input", input, "--output", output};
    args.insert(args.end(), options.begin(), options.end());
    op_command(args);
    const SafetensorsContent out = parse_safetensors(read_file(output), output);
    fs::remove(output);
    return out;
  };
  // The metadata a recorded call carries (core/attention/op_call_record.cpp): every setting.
  SafetensorsContent call = op_input("fox", 5, 4, 36);
  call.metadata = {{"op", "fox"}, {"scale", "0.25"}, {"gate_scale", "0.5"}, {"rope_base", "10000"},
                   {"remainder_to_current", "false"}};
  SafetensorsContent bare = call;
  bare.metadata.clear();
  write_file_atomically(input, serialize_safetensors(bare));
  const SafetensorsContent explicit_settings = run({"--op", "fox", "--scale", "0.25", "--gate-scale", "0.5"});
  const SafetensorsContent defaults = run({"--op", "fox"});
  CHECK_THROWS_WITH(run({}), Catch::Contains("--op is required") && Catch::Contains("names no op"));

  write_file_atomically(input, serialize_safetensors(call));
  using Options = std::vector<std::string>;
  for (const Options& options : {Options{}, Options{"--op", "fox", "--gate-scale", "0.5"}}) {
    const SafetensorsContent out = run(options);
    CHECK(out.metadata.at("op") == "fox");
    CHECK(out.metadata.at("gate_scale") == "0.5");
    // Equal up to rounding: Eigen's vector paths follow the buffers' alignment, which differs between
    // calls in one process.
    CHECK(testing::relative_error(values(out, "o"), values(explicit_settings, "o")) < 1e-13);
    CHECK(testing::relative_error(values(out, "dg"), values(explicit_settings, "dg")) < 1e-13);
  }
  // the settings matter here
  CHECK(testing::relative_error(values(defaults, "dg"), values(explicit_settings, "dg")) > 1e-2);
  // Contradicting the recording is an error naming both; nothing is written.
  CHECK_THROWS_WITH(run({"--op", "nope"}),
                    Catch::Contains("holds a recorded fox call") && Catch::Contains("--op nope"));
  CHECK_THROWS_WITH(run({"--gate-scale", "1"}), Catch::Contains("--gate-scale 1 contradicts gate_scale = 0.5"));
  CHECK_THROWS_WITH(run({"--scale", "0.5"}), Catch::Contains("--scale 0.5 contradicts scale = 0.25"));
  CHECK_THROWS_WITH(run({"--rope-base", "500"}), Catch::Contains("--rope-base applies to rope only"));
  CHECK_FALSE(fs::exists(output));
  // A setting the op does not use may be recorded (every call records all), even malformed; one it
  // uses may not.
  call.metadata["rope_base"] = "not a number";
  write_file_atomically(input, serialize_safetensors(call));
  CHECK(run({}).metadata.at("op") == "fox");
  call.metadata["gate_scale"] = "half";
  write_file_atomically(input, serialize_safetensors(call));
  CHECK_THROWS_WITH(run({}), Catch::Contains("metadata gate_scale is 'half'"));
  call.metadata["op"] = "alibi";
  write_file_atomically(input, serialize_safetensors(call));
  CHECK_THROWS_WITH(run({}), Catch::Contains("metadata op is 'alibi', which this pathbench does not have"));
  // The flag: stick-breaking's remainder_to_current comes from the recording too.
  SafetensorsContent sba = op_input("sba", 5, 4, 37);
  sba.metadata = {{"op", "sba"}, {"scale", "0.5"}, {"remainder_to_current", "true"}};
  write_file_atomically(input, serialize_safetensors(sba));
  CHECK(run({}).metadata.at("remainder_to_current") == "true");
  sba.metadata["remainder_to_current"] = "false";
  write_file_atomically(input, serialize_safetensors(sba));
  CHECK_THROWS_WITH(run({"--remainder-to-current"}), Catch::Contains("contradicts remainder_to_current = false"));
  CHECK_FALSE(fs::exists(output));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pathbench
