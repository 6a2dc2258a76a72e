// Every GPU position encoding against its CPU implementation in float64 (output, input gradients
// and the encoding's own parameter gradients, fp32 and bf16 storage), and the GPU forget-gate scan
// against the CPU gate ops. Run with `pathbench_tests --require-gpu "[cuda]"`.
#ifdef PATHBENCH_WITH_CUDA
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "core/attention/cuda/gpu_encoding.h"
#include "core/attention/fox/cuda/fox_kernels.h"
#include "core/attention/fox/fox.h"
#include "core/attention/registry.h"
#include "core/cuda/context.h"
#include "core/ops/cuda/ops.h"
#include "tests/cuda_test_support.h"
#include "tests/test_support.h"

namespace pathbench {
namespace {

using namespace cuda_testing;

// One encoding's CPU results in float64: output, input gradients (q, k, v, and x through the
// encoding's own parameters) and parameter gradients.
struct EncodingResults {
  std::vector<std::pair<std::string, std::vector<double>>> tensors;  // name → values
};

EncodingResults cpu_encoding_results(const std::string& name, const json& options, const AttentionDims& dims,
                                     ParameterSet<double> params, std::vector<double> x, std::vector<double> q,
                                     std::vector<double> k, std::vector<double> v, std::vector<double> d_o) {
  ParameterSet<double> layout;  // the encoding declares its parameters here, at the offsets of params
  const EncodingSetup<double> layout_setup{options, dims, "enc.", &layout, 0.1};
  auto enc = make_encoding<double>(name, options, layout_setup, "test");
  const size_t n = q.size();
  std::vector<double> o(n), dq(n), dk(n), dv(n), dx(x.size(), 0.0);
  std::fill(params.grads().begin(), params.grads().end(), 0.0);
  const AttentionInputs<double> in{dims, x.data(), q.data(), k.data(), v.data()};
  enc->forward(params, in, o.data());
  enc->backward(params, in, o.data(), d_o.data(), dq.data(), dk.data(), dv.data(), dx.data());
  EncodingResults r;
  r.tensors = {{"output", o}, {"dq", dq}, {"dk", dk}, {"dv", dv}, {"dx", dx}};
  for (const auto& e : layout.entries())
    r.tensors.emplace_back(e.name, std::vector<double>(params.grads().begin() + e.offset,
                                                       params.grads().begin() + e.offset + e.size));
  return r;
}

// One encoding's GPU forward and backward (storage S) against its CPU implementation in float64 on
// the same inputs (rounded to bf16 where the GPU stores bf16), tensor by tensor. fp32: relative
// error ≤ 1e-5. bf16: ≤ 1e-2, or, for a result that the float64 reference itself moves by more
// when every input and parameter changes by one bf16 unit roundoff (2⁻⁸), ≤ 3× that movement (the
// largest of three trials; measured GPU errors are about 1× it): the
// kernels round intermediates (probabilities, moved keys, transforms) to bf16, which is such a
// change, and sums over tokens that cancel (gate and β biases, dx through them) are ill-conditioned
// — their exact values move by up to ≈ 8e-2 under it (the movement is printed beside the error).
template <typename S>
void check_encoding(const std::string& name, const json& options, const AttentionDims& dims, uint64_t seed) {
  const bool bf16 = !std::is_same_v<S, float>;
  const Precision precision = bf16 ? Precision::bf16 : Precision::fp32;
  cuda::Context ctx(precision);
  cudaStream_t s = ctx.stream();
  const int64_t bh = dims.batch * dims.heads, n = bh * dims.length * dims.head_dim;
  const int64_t nx = dims.batch * dims.length * dims.width;
  ctx.reserve_staging(size_t(dims.batch * dims.length * std::max(dims.width, dims.heads * dims.head_dim)));

  ParameterSet<double> cpu_params;
  ParameterSet<float> layout;
  const EncodingSetup<double> cpu_setup{options, dims, "enc.", &cpu_params, 0.1};
  auto cpu = make_encoding<double>(name, options, cpu_setup, "test");
  const EncodingSetup<float> float_setup{options, dims, "enc.", &layout, 0.1};
  make_encoding<float>(name, options, float_setup, "test");  // declares the same parameters into layout
  cpu->init_parameters(cpu_params, seed);
  for (size_t i = 0; i < layout.count(); ++i) layout.values()[i] = float(cpu_params.values()[i]);
  for (size_t i = 0; i < layout.count(); ++i) cpu_params.values()[i] = layout.values()[i];
  cuda::CudaParameters gpu_params(layout, bf16, s);
  const cuda::EncodingSetup gpu_setup{options, dims, "enc.", &layout, &ctx};
  auto gpu = cuda::make_cuda_encoding<S>(name, options, gpu_setup, "test");

  auto stored = [&](std::vector<float> v) { return bf16 ? bf16_rounded(v) : v; };
  const auto x = randn(nx, seed + 1), q = stored(randn(n, seed + 2, 0.7)), k = stored(randn(n, seed + 3, 0.7)),
             v = stored(randn(n, seed + 4)), d_o = stored(randn(n, seed + 5));
  const EncodingResults ref =
      cpu_encoding_results(name, options, dims, cpu_params, to_double(x), to_double(q), to_double(k), to_double(v),
                           to_double(d_o));
  std::vector<double> movement(ref.tensors.size(), 0.0);  // the reference's own change under bf16-sized inputs
  if (bf16)
    for (uint64_t trial = 0; trial < 3; ++trial) {
      CounterRng rng(seed, "bf16 perturbation " + std::to_string(trial));
      std::vector<double> xp = to_double(x), qp = to_double(q), kp = to_double(k), vp = to_double(v),
                          dop = to_double(d_o);
      ParameterSet<double> pp = cpu_params;
      for (auto* t : {&xp, &qp, &kp, &vp, &dop, &pp.values()}) perturb(*t, rng, std::ldexp(1.0, -8));
      const EncodingResults moved = cpu_encoding_results(name, options, dims, pp, xp, qp, kp, vp, dop);
      for (size_t i = 0; i < movement.size(); ++i)
        movement[i] =
            std::max(movement[i], testing::relative_error(moved.tensors[i].second, ref.tensors[i].second));
    }

  auto x_d = to_device(x, s);
  auto q_d = to_device_as<S>(q, s), k_d = to_device_as<S>(k, s), v_d = to_device_as<S>(v, s),
       do_d = to_device_as<S>(d_o, s);
  auto o = poisoned_as<S>(n, s), dq = poisoned_as<S>(n, s), dk = poisoned_as<S>(n, s), dv = poisoned_as<S>(n, s);
  auto dx = to_device(std::vector<float>(nx, 0.0f), s);
  gpu->reserve(dims, cuda::Pass::training);
  const cuda::AttentionInputs<S> gpu_in{dims, x_d.data(), q_d.data(), k_d.data(), v_d.data()};
  gpu->forward(gpu_params, gpu_in, o.data());
  gpu->backward(gpu_params, gpu_in, o.data(), do_d.data(), dq.data(), dk.data(), dv.data(), dx.data());
  ParameterSet<float> grads = layout;
  gpu_params.download(grads);
  std::vector<std::vector<float>> got = {to_host_float(o, n, s), to_host_float(dq, n, s), to_host_float(dk, n, s),
                                         to_host_float(dv, n, s), to_host(dx, nx, s)};
  for (const auto& e : layout.entries())
    got.emplace_back(grads.grads().begin() + e.offset, grads.grads().begin() + e.offset + e.size);

  std::string worst;
  double worst_ratio = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const std::string& what = ref.tensors[i].first;
    const double err = relative_error(got[i], ref.tensors[i].second);
    const double bound = bf16 ? std::max(1e-2, 3.0 * movement[i]) : kFp32Tolerance;
    INFO(name << " " << options.dump() << " " << precision_name(precision) << " T " << dims.length << " D "
              << dims.head_dim << ": " << what
              << " relative error " << err << ", bound " << bound << " (reference movement " << movement[i] << ")");
    CHECK(err <= bound);
    if (err / bound > worst_ratio || !std::isfinite(err))
      worst_ratio = err / bound, worst = fmt::format("{} {:.1e} (bound {:.1e}, reference movement {:.1e})", what, err,
                                                     bound, movement[i]);
  }
  std::printf("encoding %-8s %s T=%lld D=%lld: closest to its bound: %s\n", name.c_str(), precision_name(precision),
              (long long)dims.length, (long long)dims.head_dim, worst.c_str());
}

TEST_CASE("GPU encodings match their CPU implementations (output, input and parameter gradients)", "[cuda]") {
  REQUIRE(cuda_encodings().size() == encoding_registry().size());  // every encoding has a GPU implementation
  AttentionDims dims;
  dims.batch = 2;
  dims.width = 48;
  uint64_t seed = 500;
  for (const std::string& name : cuda_encodings())
    for (auto [length, heads, head_dim] :
         {std::tuple{45, 2, 32}, std::tuple{130, 3, 16}, std::tuple{64, 1, 64}, std::tuple{33, 1, 128}}) {
      dims.length = length;
      dims.heads = heads;
      dims.head_dim = head_dim;
      check_encoding<float>(name, json::object(), dims, seed += 10);
      check_encoding<cuda::bf16>(name, json::object(), dims, seed += 10);
    }
}

TEST_CASE("GPU encodings match the CPU with their non-default options", "[cuda]") {
  // PaTH's β clip: with this test's parameters (init std 0.1, width 48) β spreads over about
  // 0.7–1.3, so a cap of 2 − 0.99 clips about half of them, and their gradient must be zero on both.
  const std::vector<std::pair<std::string, json>> variants = {
      {"fox", {{"scale_gate", true}}},
      {"sba", {{"remainder_to_current", true}}},
      {"path", {{"beta_clip_eps", 0.99}}},
      {"path_fox", {{"scale_gate", true}, {"beta_clip_eps", 0.99}}}};
  AttentionDims dims;
  dims.batch = 2, dims.width = 48, dims.length = 45, dims.heads = 2, dims.head_dim = 32;
  uint64_t seed = 900;
  for (const auto& [name, options] : variants) {
    check_encoding<float>(name, options, dims, seed += 10);
    check_encoding<cuda::bf16>(name, options, dims, seed += 10);
  }
}

TEST_CASE("GPU forget-gate scan matches the CPU gate ops", "[cuda]") {
  cuda::Context ctx(Precision::fp32);
  cudaStream_t s = ctx.stream();
  const int64_t b = 3, t = 77, h = 2;
  const auto pre = randn(b * t * h, 600, 3.0), bias = randn(h, 601), d_cum = randn(b * h * t, 602);
  std::vector<double> pre_ref = to_double(pre), cum_ref(b * h * t), log_gate(b * h * t);
  for (int64_t r = 0; r < b * t; ++r)
    for (int64_t j = 0; j < h; ++j) pre_ref[r * h + j] += bias[j];
  const std::vector<double> w_id = {1.0, 0.0, 0.0, 1.0};  // x·Wᵀ = x with W = I, x = pre
  std::vector<double> zero_bias(h, 0.0), pre_out(b * t * h);
  forget_gate_log_forward(pre_ref.data(), w_id.data(), zero_bias.data(), pre_out.data(), log_gate.data(), b, t, h, h);
  cumulative_sum(log_gate.data(), cum_ref.data(), b * h, t);
  std::vector<double> d_log(b * h * t), d_pre_ref(b * t * h), dw_unused(h * h, 0.0), dbias_ref(h, 0.0),
      dx_unused(b * t * h, 0.0);
  cumulative_sum_backward(to_double(d_cum).data(), d_log.data(), b * h, t);
  forget_gate_log_backward(pre_ref.data(), w_id.data(), pre_out.data(), d_log.data(), d_pre_ref.data(),
                           dw_unused.data(), dbias_ref.data(), dx_unused.data(), b, t, h, h);

  auto pre_d = to_device(pre, s), bias_d = to_device(bias, s), dcum_d = to_device(d_cum, s);
  auto cum = poisoned(b * h * t, s), d_pre = poisoned(b * t * h, s), scratch = poisoned(cuda::kColumnScratchPerColumn * h, s);
  auto dbias = to_device(std::vector<float>(h, 0.0f), s);
  cuda::forget_gate_forward(pre_d.data(), bias_d.data(), cum.data(), b, t, h, s);
  cuda::forget_gate_backward(pre_d.data(), dcum_d.data(), d_pre.data(), dbias.data(), scratch.data(), b, t, h, s);
  CHECK(relative_error(to_host(pre_d, b * t * h, s), pre_ref) <= kFp32Tolerance);
  CHECK(relative_error(to_host(cum, b * h * t, s), cum_ref) <= kFp32Tolerance);
  CHECK(relative_error(to_host(d_pre, b * t * h, s), d_pre_ref) <= kFp32Tolerance);
  CHECK(relative_error(to_host(dbias, h, s), dbias_ref) <= kFp32Tolerance);
}

}  // namespace
}  // namespace pathbench
#endif  // PATHBENCH_WITH_CUDA
