// The README's recipe for adding a position encoding, end to end: an encoding defined only in this
// test (linear biases in the manner of ALiBi) is registered as a user's own would be, and then
// passes the whole-model gradient check and the bit-identical rerun check, trains through
// `pathbench run`, and is timed by `pathbench bench`; unregistered, it is unknown again.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <vector>

#include "core/attention/kernel_args.h"
#include "core/attention/registry.h"
#include "core/attention/registry_entry.h"
#include "core/attention/softmax/softmax_attention.h"
#include "core/device.h"
#include "core/error.h"
#include "experiments/file_output.h"
#include "experiments/result_file.h"
#include "tests/model_checks.h"
#include "tests/runner_fixture.h"

namespace pathbench {
namespace {

using namespace testing;

// ℓ_ij = s·q_i·k_j − m_h·(i − j) with fixed slopes m_h = 2^−(h+1) and no parameters: the softmax
// kernel's gate bias with the cumulative log gate c_t = −m_h·t.
template <typename T>
class LinearBiasEncoding : public PositionEncoding<T> {
 public:
  explicit LinearBiasEncoding(const EncodingSetup<T>&) {}

  void forward(ParameterSet<T>&, const AttentionInputs<T>& in, T* o) override {
    const AttentionDims& d = in.dims;
    const int64_t rows = d.batch * d.heads * d.length;
    cum_.resize(rows), lse_.resize(rows), d_cum_.resize(rows);
    for (int64_t b = 0; b < d.batch; ++b)
      for (int64_t h = 0; h < d.heads; ++h)
        for (int64_t t = 0; t < d.length; ++t)
          cum_[(b * d.heads + h) * d.length + t] = -std::ldexp(T(1), -int(h + 1)) * T(t);
    softmax_attention_forward(args(in), o, lse_.data());
  }

  void backward(ParameterSet<T>&, const AttentionInputs<T>& in, const T* o, const T* d_o, T* dq, T* dk, T* dv,
                T*) override {
    softmax_attention_backward(args(in), o, lse_.data(), d_o, dq, dk, dv, d_cum_.data());  // the slopes are fixed
  }

 private:
  SoftmaxAttentionArgs<T> args(const AttentionInputs<T>& in) const {
    auto a = kernel_args<SoftmaxAttentionArgs<T>>(in.dims, in.q, in.k, in.v);
    a.cum_log_gate = cum_.data();
    return a;
  }

  std::vector<T> cum_, lse_, d_cum_;  // [B·H, T]
};

EncodingInfo linear_bias_info() {
  return make_encoding_info<LinearBiasEncoding>("test_linear_bias", "linear position biases (test only)", {},
                                                [](int64_t) { return std::string(); });
}

}  // namespace

TEST_CASE("an encoding registered from outside the library is checked, trained and benchmarked", "[model]") {
  {
    const EncodingRegistration registration(linear_bias_info());
    CHECK_THROWS_WITH(EncodingRegistration(linear_bias_info()), Catch::Contains("already registered"));
    {
      SingleThread single;
      check_model_gradients("test_linear_bias", "swiglu", false);
    }
    check_bit_identical_reruns("test_linear_bias");

    const std::string dir = fresh_temp_dir("extension");
    write_file_atomically(dir + "/cfg.json", R"({"model": {"n_layers": 1, "d_model": 16, "n_heads": 2,
      "encoding": "test_linear_bias"}, "task": {"name": "flipflop", "length": 16},
      "training": {"steps": 2, "batch_size": 2, "eval_examples": 4}, "threads": 1})");
    cli({"run", dir + "/cfg.json", "--out", dir + "/results"});
    const std::vector<json> results = load_results(dir + "/results");
    REQUIRE(results.size() == 1);
    CHECK(results[0]["status"] == "done");
    // It has no GPU class: with the CUDA backend built, a device 'cuda' config is refused before any run.
    if (cuda_backend_built()) {
      CHECK_THROWS_WITH(cli({"run", dir + "/cfg.json", "--out", dir + "/gpu", "--device", "cuda", "--set",
                             "precision=fp32", "--set", "model.d_model=32"}),
                        Catch::Contains("\"test_linear_bias\", which has no CUDA implementation"));
      CHECK_FALSE(std::filesystem::exists(dir + "/gpu"));
    }

    cli({"bench", "--device", "cpu", "--encodings", "test_linear_bias", "--layers", "1", "--width", "8", "--heads",
         "2", "--length", "8", "--batch", "2", "--warmup", "0", "--steps", "1", "--threads", "1", "--out",
         dir + "/bench.json"});
    const json bench = json::parse(read_file(dir + "/bench.json"));
    REQUIRE(bench["results"].size() == 1);
    CHECK(bench["results"][0]["encoding"] == "test_linear_bias");
  }
  CHECK_THROWS_WITH(find_encoding("test_linear_bias"), Catch::Contains("unknown encoding"));
}

}  // namespace pathbench
