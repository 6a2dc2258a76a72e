// GPU model conformance: every op of the CUDA backend against its CPU implementation (float64
// references on the same float inputs, outputs poisoned with NaN before each run), products at each
// precision, AdamW and clipping, a whole-model gradient check per encoding and precision, CUDA graph
// replay against eager steps, a 200-step training run tracking the CPU's loss curve, and GPU errors
// surfacing as pathbench::Error. Run with `pathbench_tests --require-gpu "[cuda]"`.
#ifdef PATHBENCH_WITH_CUDA
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <tuple>
#include <type_traits>
#include <vector>

#include "core/attention/cuda_encoding.h"
#include "core/attention/fox.h"
#include "core/attention/fox_cuda.h"
#include "core/attention/registry.h"
#include "core/cuda/buffer.h"
#include "core/cuda/context.h"
#include "core/error.h"
#include "core/model/cuda_head_layout.h"
#include "core/model/cuda_transformer.h"
#include "core/model/head_layout.h"
#include "core/model/transformer.h"
#include "core/ops/activations.h"
#include "core/ops/cross_entropy.h"
#include "core/ops/cuda_linear.h"
#include "core/ops/cuda_ops.h"
#include "core/ops/embedding.h"
#include "core/ops/linear.h"
#include "core/ops/rmsnorm.h"
#include "core/optim/adamw.h"
#include "core/optim/cuda_adamw.h"
#include "core/optim/trainer.h"
#include "core/optim/training_backend.h"
#include "core/rng.h"
#include "tests/test_support.h"

namespace pathbench {
namespace {

using cuda::DeviceBuffer;

std::vector<float> randn(size_t n, uint64_t seed, double scale = 1.0, double offset = 0.0) {
  CounterRng rng(seed, "cuda-test");
  std::vector<float> v(n);
  for (auto& x : v) x = float(offset + scale * rng.normal());
  return v;
}

std::vector<int32_t> random_tokens(size_t n, int64_t vocab, uint64_t seed) {
  CounterRng rng(seed, "cuda-test-tokens");
  std::vector<int32_t> v(n);
  for (auto& x : v) x = int32_t(rng.below(uint64_t(vocab)));
  return v;
}

template <typename T>
std::vector<double> to_double(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// ‖got − want‖ / ‖want‖ (absolute when want is 0); infinite when got holds a NaN (an unwritten,
// poisoned element) or the sizes differ.
double rel_error(const std::vector<float>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return std::numeric_limits<double>::infinity();
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += want[i] * want[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

template <typename T>
DeviceBuffer<T> to_device(const std::vector<T>& host, cudaStream_t s) {
  DeviceBuffer<T> d(std::max<size_t>(host.size(), 1), "test input");
  cuda::copy_to_device(d.data(), host.data(), host.size(), s);
  return d;
}

// A device array filled with NaN (all bits set), so elements a kernel fails to write show up.
DeviceBuffer<float> poisoned(size_t n, cudaStream_t s) {
  DeviceBuffer<float> d(std::max<size_t>(n, 1), "test output");
  PATHBENCH_CUDA_CHECK(cudaMemsetAsync(d.data(), 0xff, n * sizeof(float), s));
  PATHBENCH_CUDA_CHECK(cudaStreamSynchronize(s));
  return d;
}

template <typename T>
std::vector<T> to_host(const DeviceBuffer<T>& d, size_t n, cudaStream_t s) {
  std::vector<T> h(n);
  cuda::copy_to_host(h.data(), d.data(), n, s);
  return h;
}

constexpr double kFp32Tolerance = 1e-5;

// The encodings with a GPU implementation.
std::vector<std::string> cuda_encodings() {
  std::vector<std::string> names;
  for (const auto& e : encoding_registry())
    if (e.make_cuda_float) names.push_back(e.name);
  return names;
}

TEST_CASE("GPU RMSNorm forward and backward match the CPU", "[cuda]") {
  cuda::Context ctx(Precision::fp32);
  cudaStream_t s = ctx.stream();
  const std::pair<int64_t, int64_t> shapes[] = {{37, 96}, {300, 128}, {5, 1000}};
  uint64_t seed = 10;
  for (auto [n, c] : shapes) {
    const auto x = randn(n * c, ++seed), g = randn(c, ++seed, 0.2, 1.0), dy = randn(n * c, ++seed);
    const auto dx0 = randn(n * c, ++seed), dg0 = randn(c, ++seed);
    std::vector<double> y_ref(n * c), rstd_ref(n), dx_ref = to_double(dx0), dg_ref = to_double(dg0);
    rmsnorm_forward(to_double(x).data(), to_double(g).data(), y_ref.data(), rstd_ref.data(), n, c, 1e-5);
    rmsnorm_backward(to_double(x).data(), to_double(g).data(), rstd_ref.data(), to_double(dy).data(), dx_ref.data(),
                     dg_ref.data(), n, c);

    auto xd = to_device(x, s), gd = to_device(g, s), dyd = to_device(dy, s), dxd = to_device(dx0, s),
         dgd = to_device(dg0, s);
    auto y = poisoned(n * c, s), rstd = poisoned(n, s), scratch = poisoned(cuda::kColumnScratchPerColumn * c, s);
    cuda::rmsnorm_forward(xd.data(), gd.data(), y.data(), rstd.data(), n, c, 1e-5f, s);
    cuda::rmsnorm_backward(xd.data(), gd.data(), rstd.data(), dyd.data(), dxd.data(), dgd.data(), scratch.data(), n,
                           c, s);
    INFO("n " << n << ", c " << c);
    CHECK(rel_error(to_host(y, n * c, s), y_ref) <= kFp32Tolerance);
    CHECK(rel_error(to_host(rstd, n, s), rstd_ref) <= kFp32Tolerance);
    CHECK(rel_error(to_host(dxd, n * c, s), dx_ref) <= kFp32Tolerance);
    CHECK(rel_error(to_host(dgd, c, s), dg_ref) <= kFp32Tolerance);
  }
}

TEST_CASE("GPU embedding forward and backward match the CPU", "[cuda]") {
  cuda::Context ctx(Precision::fp32);
  cudaStream_t s = ctx.stream();
  const int64_t shapes[][3] = {{1000, 7, 64}, {200, 300, 48}, {33, 1, 130}, {4096, 5, 128}};  // n, vocab, c
  uint64_t seed = 20;
  for (const auto& shape : shapes) {
    const int64_t n = shape[0], v = shape[1], c = shape[2];
    const auto tokens = random_tokens(n, v, ++seed);
    const auto table = randn(v * c, ++seed), dout = randn(n * c, ++seed), dtable0 = randn(v * c, ++seed);
    std::vector<double> out_ref(n * c), dtable_ref = to_double(dtable0);
    embedding_forward(tokens.data(), to_double(table).data(), out_ref.data(), n, c);
    embedding_backward(tokens.data(), to_double(dout).data(), dtable_ref.data(), n, c);

    const cuda::EmbeddingPlanLayout layout = cuda::embedding_plan_layout(n, v);
    std::vector<int32_t> plan(layout.size);
    cuda::build_embedding_plan(tokens.data(), n, v, plan.data());
    auto tokd = to_device(tokens, s), pland = to_device(plan, s);
    auto tabled = to_device(table, s), doutd = to_device(dout, s), dtabled = to_device(dtable0, s);
    auto out = poisoned(n * c, s), partial = poisoned(layout.max_segments * c, s);
    cuda::embedding_forward(tokd.data(), tabled.data(), out.data(), n, c, s);
    cuda::embedding_backward(pland.data(), doutd.data(), dtabled.data(), partial.data(), n, v, c, s);
    INFO("n " << n << ", vocab " << v << ", c " << c);
    CHECK(rel_error(to_host(out, n * c, s), out_ref) == 0.0);
    CHECK(rel_error(to_host(dtabled, v * c, s), dtable_ref) <= kFp32Tolerance);
  }
}

TEST_CASE("GPU activations match the CPU", "[cuda]") {
  cuda::Context ctx(Precision::fp32);
  cudaStream_t s = ctx.stream();
  const int64_t n = 10007;
  const auto a = randn(n, 31, 2.0), b = randn(n, 32), dh = randn(n, 33);
  const auto ad = to_double(a), bd = to_double(b), dhd = to_double(dh);
  auto a_d = to_device(a, s), b_d = to_device(b, s), dh_d = to_device(dh, s);
  {
    std::vector<double> h_ref(n), da_ref(n), db_ref(n);
    swiglu_forward(ad.data(), bd.data(), h_ref.data(), n);
    swiglu_backward(ad.data(), bd.data(), dhd.data(), da_ref.data(), db_ref.data(), n);
    auto h = poisoned(n, s), da = poisoned(n, s), db = poisoned(n, s);
    cuda::swiglu_forward(a_d.data(), b_d.data(), h.data(), n, s);
    cuda::swiglu_backward(a_d.data(), b_d.data(), dh_d.data(), da.data(), db.data(), n, s);
    CHECK(rel_error(to_host(h, n, s), h_ref) <= kFp32Tolerance);
    CHECK(rel_error(to_host(da, n, s), da_ref) <= kFp32Tolerance);
    CHECK(rel_error(to_host(db, n, s), db_ref) <= kFp32Tolerance);
  }
  {
    std::vector<double> h_ref(n), dx_ref(n);
    gelu_forward(ad.data(), h_ref.data(), n);
    gelu_backward(ad.data(), dhd.data(), dx_ref.data(), n);
    auto h = poisoned(n, s), dx = poisoned(n, s);
    cuda::gelu_forward(a_d.data(), h.data(), n, s);
    cuda::gelu_backward(a_d.data(), dh_d.data(), dx.data(), n, s);
    CHECK(rel_error(to_host(h, n, s), h_ref) <= kFp32Tolerance);
    CHECK(rel_error(to_host(dx, n, s), dx_ref) <= kFp32Tolerance);
  }
}

TEST_CASE("GPU masked cross-entropy and argmax match the CPU", "[cuda]") {
  cuda::Context ctx(Precision::fp32);
  cudaStream_t s = ctx.stream();
  const int64_t shapes[][2] = {{333, 7}, {64, 1000}, {9, 1}};
  uint64_t seed = 40;
  for (const auto& shape : shapes) {
    const int64_t n = shape[0], v = shape[1];
    for (bool all_zero : {false, true}) {
      const auto logits = randn(n * v, ++seed, 3.0);
      const auto targets = random_tokens(n, v, ++seed);
      std::vector<float> weights = randn(n, ++seed);
      for (auto& w : weights) w = all_zero || w < -0.5f ? 0.0f : std::fabs(w);
      std::vector<double> probs_ref(n * v), dlogits_ref(n * v);
      const double loss_ref =
          cross_entropy_forward(to_double(logits).data(), targets.data(), weights.data(), probs_ref.data(), n, v);
      cross_entropy_backward(probs_ref.data(), targets.data(), weights.data(), 1.0, dlogits_ref.data(), n, v);

      auto ld = to_device(logits, s), wd = to_device(weights, s);
      auto td = to_device(targets, s);
      auto probs = poisoned(n * v, s), dlogits = poisoned(n * v, s);
      DeviceBuffer<double> row_loss(n, "row losses");
      DeviceBuffer<cuda::CrossEntropyTotals> totals(1, "totals");
      DeviceBuffer<int32_t> argmax(n, "argmax");
      cuda::cross_entropy_forward(ld.data(), td.data(), wd.data(), probs.data(), row_loss.data(), totals.data(), n, v,
                                  s);
      cuda::cross_entropy_backward(probs.data(), td.data(), wd.data(), totals.data(), 1.0f, dlogits.data(), n, v, s);
      cuda::argmax_rows(ld.data(), argmax.data(), n, v, s);
      const double loss = cuda::loss_value(to_host(totals, 1, s)[0]);
      std::vector<int32_t> argmax_ref(n);
      for (int64_t r = 0; r < n; ++r)
        argmax_ref[r] = int32_t(std::max_element(logits.begin() + r * v, logits.begin() + (r + 1) * v) -
                                (logits.begin() + r * v));
      INFO("n " << n << ", v " << v << ", all weights zero " << all_zero);
      CHECK(std::fabs(loss - loss_ref) <= kFp32Tolerance * std::max(1.0, std::fabs(loss_ref)));
      CHECK(rel_error(to_host(probs, n * v, s), probs_ref) <= kFp32Tolerance);
      CHECK(rel_error(to_host(dlogits, n * v, s), dlogits_ref) <= kFp32Tolerance);
      CHECK(to_host(argmax, n, s) == argmax_ref);
    }
  }
}

double product_tolerance(Precision p) {
  switch (p) {
    case Precision::tf32: return 2e-3;
    case Precision::bf16: return 1e-2;
    case Precision::fp32: break;
  }
  return kFp32Tolerance;
}

TEST_CASE("GPU linear forward and backward match the CPU at every precision", "[cuda]") {
  const int64_t shapes[][3] = {{70, 64, 192}, {512, 128, 8}, {33, 40, 24}};  // n, in, out
  uint64_t seed = 60;
  for (Precision precision : {Precision::fp32, Precision::tf32, Precision::bf16}) {
    for (const auto& shape : shapes) {
      const int64_t n = shape[0], in = shape[1], out = shape[2];
      cuda::Context ctx(precision);
      cudaStream_t s = ctx.stream();
      ctx.reserve_staging(size_t(n * std::max(in, out)));
      ParameterSet<float> layout;
      const auto id = layout.add("w", {out, in});
      layout.values() = randn(out * in, ++seed, 0.1);
      cuda::CudaParameters params(layout, precision == Precision::bf16, s);
      const auto x = randn(n * in, ++seed), dy = randn(n * out, ++seed), dx0 = randn(n * in, ++seed);
      const auto xd = to_double(x), wd = to_double(layout.values()), dyd = to_double(dy);
      std::vector<double> y_ref(n * out), dx_ref = to_double(dx0), dw_ref(out * in, 0.0);
      linear_forward(xd.data(), wd.data(), y_ref.data(), n, in, out);
      linear_backward(xd.data(), wd.data(), dyd.data(), dx_ref.data(), dw_ref.data(), n, in, out, true);

      auto x_dev = to_device(x, s), dy_dev = to_device(dy, s), dx_dev = to_device(dx0, s);
      auto y = poisoned(n * out, s);
      cuda::linear_forward(ctx, {x_dev.data()}, params.weight(id), y.data(), n, in, out);
      cuda::linear_backward(ctx, {x_dev.data()}, params.weight(id), {dy_dev.data()}, dx_dev.data(), n, in, out, true);
      ParameterSet<float> back = layout;
      params.download(back);
      const double tol = product_tolerance(precision);
      INFO(precision_name(precision) << ": n " << n << ", in " << in << ", out " << out);
      CHECK(rel_error(to_host(y, n * out, s), y_ref) <= tol);
      CHECK(rel_error(to_host(dx_dev, n * in, s), dx_ref) <= tol);
      CHECK(rel_error(back.grads(), dw_ref) <= tol);
    }
  }
}

TEST_CASE("GPU head split and merge match the CPU layout", "[cuda]") {
  cuda::Context ctx(Precision::fp32);
  cudaStream_t s = ctx.stream();
  const int64_t b = 3, t = 37, h = 4, d = 16, hd = h * d, n = b * t;
  const auto rows = randn(n * 3 * hd, 70);  // [B, T, 3·H·D]: q | k | v per row
  std::vector<float> k_rows(n * hd), k_heads(n * hd);
  for (int64_t r = 0; r < n; ++r) std::copy_n(rows.begin() + r * 3 * hd + hd, hd, k_rows.begin() + r * hd);
  split_heads(k_rows.data(), k_heads.data(), b, t, h, d);
  auto rows_d = to_device(rows, s);
  auto heads = poisoned(n * hd, s), merged = poisoned(n * 3 * hd, s);
  cuda::split_heads(rows_d.data() + hd, 3 * hd, heads.data(), b, t, h, d, s);
  cuda::merge_heads(heads.data(), merged.data() + hd, 3 * hd, b, t, h, d, s);
  CHECK(to_host(heads, n * hd, s) == k_heads);
  const auto merged_h = to_host(merged, n * 3 * hd, s);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < 3 * hd; ++j) {
      const float got = merged_h[r * 3 * hd + j];
      if (j >= hd && j < 2 * hd)
        REQUIRE(got == rows[r * 3 * hd + j]);
      else
        REQUIRE(std::isnan(got));  // only the k columns are written
    }
  // bf16 storage: values come back rounded to bf16 (relative error below 2^-8).
  DeviceBuffer<cuda::bf16> heads16(n * hd, "bf16 heads");
  auto merged32 = poisoned(n * hd, s);
  cuda::split_heads(rows_d.data() + hd, 3 * hd, heads16.data(), b, t, h, d, s);
  cuda::merge_heads(heads16.data(), merged32.data(), hd, b, t, h, d, s);
  CHECK(rel_error(to_host(merged32, n * hd, s), to_double(k_rows)) <= 4e-3);
}

TEST_CASE("GPU AdamW with global-norm clipping matches the CPU", "[cuda]") {
  cuda::Context ctx(Precision::bf16);
  cudaStream_t s = ctx.stream();
  ParameterSet<float> cpu;
  cpu.add("w", {50, 60});
  cpu.add("g", {77}, false);
  cpu.values() = randn(cpu.count(), 80);
  const int64_t p = int64_t(cpu.count());
  const AdamWConfig config{0.9, 0.98, 1e-8, 0.1};
  const double max_norm = 0.5;
  AdamW<float> opt(cpu, config);
  cuda::CudaParameters gpu(cpu, true, s);
  DeviceBuffer<float> m(p, "m"), v(p, "v"), clip_scale(1, "scale");
  PATHBENCH_CUDA_CHECK(cudaMemsetAsync(m.data(), 0, p * sizeof(float), s));
  PATHBENCH_CUDA_CHECK(cudaMemsetAsync(v.data(), 0, p * sizeof(float), s));
  std::vector<uint8_t> decay(p, 0);
  std::fill(decay.begin(), decay.begin() + 3000, 1);
  auto decay_d = to_device(decay, s);
  DeviceBuffer<double> partial(cuda::kGradNormBlocks, "partial"), norm(1, "norm");
  DeviceBuffer<cuda::AdamWStepTerms> terms(1, "terms");
  for (int step = 1; step <= 3; ++step) {
    const double lr = 1e-2 * step;
    const auto grads = randn(p, 80 + step, 0.05);
    cpu.grads() = grads;
    const double norm_ref = clip_grad_norm(cpu.grads(), max_norm);
    opt.step(cpu, lr);
    auto grads_d = to_device(grads, s);
    const std::vector<cuda::AdamWStepTerms> host_terms{cuda::AdamWStepTerms(adamw_terms(config, lr, step))};
    cuda::copy_to_device(terms.data(), host_terms.data(), 1, s);
    cuda::grad_norm_and_clip_scale(grads_d.data(), p, max_norm, partial.data(), norm.data(), clip_scale.data(), s);
    cuda::adamw_update(gpu.values(), gpu.values_bf16(), grads_d.data(), m.data(), v.data(), decay_d.data(),
                       clip_scale.data(), terms.data(), {0.9f, 0.98f, 1e-8f}, p, s);
    INFO("step " << step);
    CHECK(std::fabs(to_host(norm, 1, s)[0] - norm_ref) <= 1e-9 * norm_ref);
    CHECK(rel_error(to_host(grads_d, p, s), to_double(cpu.grads())) <= 1e-6);
  }
  ParameterSet<float> back = cpu;
  gpu.download(back);
  CHECK(rel_error(back.values(), to_double(cpu.values())) <= 1e-6);
  CHECK(rel_error(to_host(m, p, s), to_double(opt.first_moment())) <= 1e-6);
  CHECK(rel_error(to_host(v, p, s), to_double(opt.second_moment())) <= 1e-6);
  // The bf16 shadow follows the values.
  std::vector<cuda::bf16> shadow(p);
  cuda::copy_to_host(shadow.data(), gpu.values_bf16(), p, s);
  std::vector<float> shadow_f(shadow.begin(), shadow.end());
  CHECK(rel_error(shadow_f, to_double(cpu.values())) <= 4e-3);
}

// Rounds to bf16 and back: what the GPU sees of an input stored in bf16.
std::vector<float> bf16_rounded(const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = float(cuda::bf16(v[i]));
  return out;
}

template <typename S>
DeviceBuffer<S> to_device_as(const std::vector<float>& host, cudaStream_t s) {
  if constexpr (std::is_same_v<S, float>) {
    return to_device(host, s);
  } else {
    std::vector<S> converted(host.begin(), host.end());
    return to_device(converted, s);
  }
}

template <typename S>
std::vector<float> to_host_float(const DeviceBuffer<S>& d, size_t n, cudaStream_t s) {
  const std::vector<S> h = to_host(d, n, s);
  return std::vector<float>(h.begin(), h.end());
}

template <typename S>
DeviceBuffer<S> poisoned_as(size_t n, cudaStream_t s) {
  DeviceBuffer<S> d(std::max<size_t>(n, 1), "test output");
  PATHBENCH_CUDA_CHECK(cudaMemsetAsync(d.data(), 0xff, n * sizeof(S), s));  // NaN in fp32 and bf16
  return d;
}

// Multiplies every value by (1 + u·ξ), ξ uniform in [−1, 1]: a change of at most one unit roundoff u.
void perturb(std::vector<double>& v, CounterRng& rng, double u) {
  for (auto& x : v) x *= 1.0 + u * (2.0 * rng.uniform() - 1.0);
}

// One encoding's CPU results in float64: output, input gradients (q, k, v, and x through the
// encoding's own parameters) and parameter gradients.
struct EncodingResults {
  std::vector<std::pair<std::string, std::vector<double>>> tensors;  // name → values
};

EncodingResults cpu_encoding_results(const std::string& name, const AttentionDims& dims, ParameterSet<double> params,
                                     std::vector<double> x, std::vector<double> q, std::vector<double> k,
                                     std::vector<double> v, std::vector<double> d_o) {
  ParameterSet<double> layout;  // the encoding declares its parameters here, at the offsets of params
  const EncodingSetup<double> layout_setup{json::object(), dims, "enc.", &layout, 0.1};
  auto enc = make_encoding<double>(name, json::object(), layout_setup, "test");
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
void check_encoding(const std::string& name, const AttentionDims& dims, uint64_t seed) {
  const bool bf16 = !std::is_same_v<S, float>;
  const Precision precision = bf16 ? Precision::bf16 : Precision::fp32;
  cuda::Context ctx(precision);
  cudaStream_t s = ctx.stream();
  const int64_t bh = dims.batch * dims.heads, n = bh * dims.length * dims.head_dim;
  const int64_t nx = dims.batch * dims.length * dims.width;
  ctx.reserve_staging(size_t(dims.batch * dims.length * std::max(dims.width, dims.heads * dims.head_dim)));

  ParameterSet<double> cpu_params;
  ParameterSet<float> layout;
  const EncodingSetup<double> cpu_setup{json::object(), dims, "enc.", &cpu_params, 0.1};
  auto cpu = make_encoding<double>(name, json::object(), cpu_setup, "test");
  const EncodingSetup<float> float_setup{json::object(), dims, "enc.", &layout, 0.1};
  make_encoding<float>(name, json::object(), float_setup, "test");  // declares the same parameters into layout
  cpu->init_parameters(cpu_params, seed);
  for (size_t i = 0; i < layout.count(); ++i) layout.values()[i] = float(cpu_params.values()[i]);
  for (size_t i = 0; i < layout.count(); ++i) cpu_params.values()[i] = layout.values()[i];
  cuda::CudaParameters gpu_params(layout, bf16, s);
  const cuda::EncodingSetup gpu_setup{json::object(), dims, "enc.", &layout, &ctx};
  auto gpu = cuda::make_cuda_encoding<S>(name, json::object(), gpu_setup, "test");

  auto stored = [&](std::vector<float> v) { return bf16 ? bf16_rounded(v) : v; };
  const auto x = randn(nx, seed + 1), q = stored(randn(n, seed + 2, 0.7)), k = stored(randn(n, seed + 3, 0.7)),
             v = stored(randn(n, seed + 4)), d_o = stored(randn(n, seed + 5));
  const EncodingResults ref =
      cpu_encoding_results(name, dims, cpu_params, to_double(x), to_double(q), to_double(k), to_double(v), to_double(d_o));
  std::vector<double> movement(ref.tensors.size(), 0.0);  // the reference's own change under bf16-sized inputs
  if (bf16)
    for (uint64_t trial = 0; trial < 3; ++trial) {
      CounterRng rng(seed, "bf16 perturbation " + std::to_string(trial));
      std::vector<double> xp = to_double(x), qp = to_double(q), kp = to_double(k), vp = to_double(v),
                          dop = to_double(d_o);
      ParameterSet<double> pp = cpu_params;
      for (auto* t : {&xp, &qp, &kp, &vp, &dop, &pp.values()}) perturb(*t, rng, std::ldexp(1.0, -8));
      const EncodingResults moved = cpu_encoding_results(name, dims, pp, xp, qp, kp, vp, dop);
      for (size_t i = 0; i < movement.size(); ++i)
        movement[i] =
            std::max(movement[i], testing::relative_error(moved.tensors[i].second, ref.tensors[i].second));
    }

  auto x_d = to_device(x, s);
  auto q_d = to_device_as<S>(q, s), k_d = to_device_as<S>(k, s), v_d = to_device_as<S>(v, s),
       do_d = to_device_as<S>(d_o, s);
  auto o = poisoned_as<S>(n, s), dq = poisoned_as<S>(n, s), dk = poisoned_as<S>(n, s), dv = poisoned_as<S>(n, s);
  auto dx = to_device(std::vector<float>(nx, 0.0f), s);
  gpu->reserve(dims);
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
    const double err = rel_error(got[i], ref.tensors[i].second);
    const double bound = bf16 ? std::max(1e-2, 3.0 * movement[i]) : kFp32Tolerance;
    INFO(name << " " << precision_name(precision) << " T " << dims.length << " D " << dims.head_dim << ": " << what
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
    for (auto [length, heads, head_dim] : {std::tuple{45, 2, 32}, std::tuple{130, 3, 16}, std::tuple{64, 1, 64}}) {
      dims.length = length;
      dims.heads = heads;
      dims.head_dim = head_dim;
      check_encoding<float>(name, dims, seed += 10);
      check_encoding<cuda::bf16>(name, dims, seed += 10);
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
  CHECK(rel_error(to_host(pre_d, b * t * h, s), pre_ref) <= kFp32Tolerance);
  CHECK(rel_error(to_host(cum, b * h * t, s), cum_ref) <= kFp32Tolerance);
  CHECK(rel_error(to_host(d_pre, b * t * h, s), d_pre_ref) <= kFp32Tolerance);
  CHECK(rel_error(to_host(dbias, h, s), dbias_ref) <= kFp32Tolerance);
}

TokenBatch make_batch(int64_t b, int64_t t, int64_t vocab, uint64_t seed, bool copy_previous) {
  TokenBatch batch;
  batch.batch = b;
  batch.length = t;
  batch.tokens = random_tokens(b * t, vocab, seed);
  if (copy_previous) {  // target at t: the token at t − 1 (position 0 unscored)
    batch.targets.assign(b * t, 0);
    batch.weights.assign(b * t, 1.0f);
    for (int64_t i = 0; i < b; ++i) {
      batch.weights[i * t] = 0.0f;
      for (int64_t j = 1; j < t; ++j) batch.targets[i * t + j] = batch.tokens[i * t + j - 1];
    }
  } else {
    batch.targets = random_tokens(b * t, vocab, seed + 1);
    batch.weights = randn(b * t, seed + 2);
    for (auto& w : batch.weights) w = w < -0.8f ? 0.0f : 0.5f + 0.5f * std::fabs(w);
  }
  return batch;
}

// Unit roundoff of a compute precision's operands: bf16 2⁻⁸, tf32 2⁻¹¹ (fp32: 0, not used).
double unit_roundoff(Precision p) {
  switch (p) {
    case Precision::tf32: return std::ldexp(1.0, -11);
    case Precision::bf16: return std::ldexp(1.0, -8);
    case Precision::fp32: break;
  }
  return 0.0;
}

// How far each gradient tensor of the float64 model moves when every parameter changes by up to one
// unit roundoff u (the largest of three trials): the conditioning of that gradient at u.
std::vector<double> gradient_movement(const ModelConfig& config, const std::vector<double>& values,
                                      const TokenBatch& batch, const std::vector<double>& grads, double u) {
  std::vector<double> movement;
  for (uint64_t trial = 0; trial < 3; ++trial) {
    Transformer<double> moved(config);
    moved.params().values() = values;
    CounterRng rng(trial, "model perturbation");
    perturb(moved.params().values(), rng, u);
    moved.forward_loss(batch);
    moved.backward();
    const auto& entries = moved.params().entries();
    movement.resize(entries.size(), 0.0);
    for (size_t i = 0; i < entries.size(); ++i) {
      const auto& e = entries[i];
      const auto slice = [&](const std::vector<double>& v) {
        return std::vector<double>(v.begin() + e.offset, v.begin() + e.offset + e.size);
      };
      movement[i] = std::max(movement[i], testing::relative_error(slice(moved.params().grads()), slice(grads)));
    }
  }
  return movement;
}

TEST_CASE("GPU model loss and gradients match the CPU model per encoding and precision", "[cuda]") {
  REQUIRE(!cuda_encodings().empty());
  struct Variant {
    int64_t layers, width, heads, length, batch, vocab;
    const char* mlp;
    bool tied;
  };
  const Variant variants[] = {{2, 64, 2, 40, 3, 11, "swiglu", false}, {1, 64, 4, 70, 2, 5, "gelu", true}};
  for (const std::string& encoding : cuda_encodings()) {
    for (const Variant& var : variants) {
      ModelConfig config;
      config.n_layers = var.layers;
      config.d_model = var.width;
      config.n_heads = var.heads;
      config.vocab_size = var.vocab;
      config.mlp = var.mlp;
      config.tie_embeddings = var.tied;
      config.encoding = encoding;
      config.init_std = 0.1;
      config = ModelConfig::from_json(config.to_json(), "test model");
      const TokenBatch batch = make_batch(var.batch, var.length, var.vocab, 90 + var.layers, false);
      for (Precision precision : {Precision::fp32, Precision::tf32, Precision::bf16}) {
        cuda::Transformer gpu(config, precision);
        gpu.init_parameters(5);
        const double loss = gpu.forward_loss(batch);
        gpu.backward();
        const ParameterSet<float>& got = gpu.download_parameters();

        Transformer<double> cpu(config);
        cpu.params().values() = to_double(got.values());
        const double loss_ref = cpu.forward_loss(batch);
        cpu.backward();

        // Per tensor: fp32 ≤ 1e-5; tf32 and bf16 within the precision's product bound (2e-3, 1e-2)
        // or within 2× the float64 gradient's own movement under parameters changed by one unit
        // roundoff (as check_encoding; measured GPU errors are 0.5–0.8× that movement here): the
        // small tensors that sum over every token (norm gains, gate and β biases) and, in bf16,
        // the gradients behind a second layer move by 2e-2 to 4e-1 under bf16-sized changes.
        const std::vector<double> movement =
            precision == Precision::fp32
                ? std::vector<double>(got.entries().size(), 0.0)
                : gradient_movement(config, cpu.params().values(), batch, cpu.params().grads(), unit_roundoff(precision));
        double worst_ratio = 0;
        std::string worst;
        for (size_t i = 0; i < got.entries().size(); ++i) {
          const auto& e = got.entries()[i];
          const std::vector<float> g(got.grads().begin() + e.offset, got.grads().begin() + e.offset + e.size);
          const std::vector<double> r(cpu.params().grads().begin() + e.offset,
                                      cpu.params().grads().begin() + e.offset + e.size);
          const double err = rel_error(g, r), bound = std::max(product_tolerance(precision), 2.0 * movement[i]);
          INFO(encoding << " " << precision_name(precision) << " variant " << var.layers << " layer(s): " << e.name
                        << " relative error " << err << ", bound " << bound);
          CHECK(err <= bound);
          if (err / bound > worst_ratio || !std::isfinite(err))
            worst_ratio = err / bound,
            worst = fmt::format("{} {:.1e} (bound {:.1e})", e.name, err, bound);
        }
        const double loss_err = std::fabs(loss - loss_ref) / loss_ref;
        std::printf("gradient check %-8s %-5s %d layer(s) D=%lld: loss rel. error %.2e, closest to its bound: %s\n",
                    encoding.c_str(), precision_name(precision), int(var.layers), (long long)config.head_dim(),
                    loss_err, worst.c_str());
        CHECK(loss_err <= product_tolerance(precision));
      }
    }
  }
}

ModelConfig small_training_config(const std::string& encoding) {
  ModelConfig config;
  config.n_layers = 1;
  config.d_model = 64;
  config.n_heads = 2;
  config.vocab_size = 8;
  config.mlp = "gelu";
  config.encoding = encoding;
  return ModelConfig::from_json(config.to_json(), "test model");
}

TrainingSetup small_training_setup() {
  TrainingSetup setup;
  setup.adamw = AdamWConfig{0.9, 0.98, 1e-8, 0.1};
  setup.schedule = LrSchedule{3e-3, 20, 200, 0.1};
  setup.clip_norm = 1.0;
  setup.init_seed = 3;
  return setup;
}

TEST_CASE("CUDA graph replay gives the results of eager steps", "[cuda]") {
  const std::string encoding = cuda_encodings().front();
  const ModelConfig config = small_training_config(encoding);
  auto graphed = make_training_backend(config, small_training_setup(), {"cuda", Precision::fp32, true});
  auto eager = make_training_backend(config, small_training_setup(), {"cuda", Precision::fp32, false});
  for (int step = 0; step < 5; ++step) {
    const TokenBatch batch = make_batch(4, 64, 8, 200 + step, true);
    const TrainStep a = graphed->step(batch), b = eager->step(batch);
    INFO("step " << step);
    CHECK(a.loss == Approx(b.loss).epsilon(1e-6));
    CHECK(a.grad_norm == Approx(b.grad_norm).epsilon(1e-6));
    CHECK(a.lr == b.lr);
  }
  const auto pa = graphed->download_parameters().values(), pb = eager->download_parameters().values();
  CHECK(rel_error(pa, to_double(pb)) <= 1e-6);
  // A batch of another shape after the graph: re-planned, still the same results.
  const TokenBatch other = make_batch(2, 50, 8, 300, true);
  CHECK(graphed->step(other).loss == Approx(eager->step(other).loss).epsilon(1e-6));
  CHECK(graphed->predict(other).argmax == eager->predict(other).argmax);
}

TEST_CASE("Parameters and optimizer state move between the CPU and GPU backends", "[cuda]") {
  const ModelConfig config = small_training_config("rope");
  auto cpu = make_training_backend(config, small_training_setup(), {"cpu", Precision::fp32, false});
  auto gpu = make_training_backend(config, small_training_setup(), {"cuda", Precision::fp32, true});
  // Same initialization on both devices.
  CHECK(gpu->download_parameters().values() == cpu->download_parameters().values());
  for (int step = 0; step < 3; ++step) cpu->step(make_batch(4, 32, 8, 700 + step, true));
  gpu->upload_parameters(cpu->download_parameters());
  gpu->upload_optimizer_state(cpu->download_optimizer_state());
  CHECK(gpu->steps() == 3);
  for (int step = 3; step < 6; ++step) {  // the third GPU step replays the captured graph
    const TokenBatch batch = make_batch(4, 32, 8, 700 + step, true);
    const TrainStep a = cpu->step(batch), b = gpu->step(batch);
    CHECK(b.loss == Approx(a.loss).epsilon(1e-5));
    CHECK(b.lr == a.lr);
  }
  CHECK(rel_error(gpu->download_parameters().values(), to_double(cpu->download_parameters().values())) <= 1e-5);
  const OptimizerState sc = cpu->download_optimizer_state(), sg = gpu->download_optimizer_state();
  CHECK(sg.steps == sc.steps);
  CHECK(rel_error(sg.second_moment, to_double(sc.second_moment)) <= 1e-4);
  OptimizerState bad = sc;
  bad.first_moment.pop_back();
  CHECK_THROWS_AS(gpu->upload_optimizer_state(bad), Error);
}

TEST_CASE("200 GPU training steps track the CPU loss curve", "[cuda]") {
  const std::vector<std::string> encodings = cuda_encodings();
  const std::string encoding =
      std::find(encodings.begin(), encodings.end(), "rope") != encodings.end() ? "rope" : encodings.front();
  const ModelConfig config = small_training_config(encoding);
  const TrainingSetup setup = small_training_setup();
  constexpr int kSteps = 200, kWindow = 20;
  auto cpu = make_training_backend(config, setup, {"cpu", Precision::fp32, false});
  std::vector<double> cpu_curve;
  for (int step = 0; step < kSteps; ++step) cpu_curve.push_back(cpu->step(make_batch(16, 64, 8, 1000 + step, true)).loss);
  auto window_means = [&](const std::vector<double>& curve) {
    std::vector<double> means;
    for (int w = 0; w < kSteps / kWindow; ++w) {
      double sum = 0;
      for (int i = 0; i < kWindow; ++i) sum += curve[w * kWindow + i];
      means.push_back(sum / kWindow);
    }
    return means;
  };
  const std::vector<double> cpu_means = window_means(cpu_curve);
  REQUIRE(cpu_means.back() < 0.85 * cpu_means.front());  // the model learns, so tracking means something
  for (auto [precision, tol] : {std::pair{Precision::fp32, 0.02}, std::pair{Precision::bf16, 0.05}}) {
    auto gpu = make_training_backend(config, setup, {"cuda", precision, true});
    std::vector<double> curve;
    for (int step = 0; step < kSteps; ++step) curve.push_back(gpu->step(make_batch(16, 64, 8, 1000 + step, true)).loss);
    const std::vector<double> means = window_means(curve);
    std::string line;
    double worst = 0;
    for (size_t w = 0; w < means.size(); ++w) {
      line += fmt::format(" {:.3f}/{:.3f}", means[w], cpu_means[w]);
      worst = std::max(worst, std::fabs(means[w] - cpu_means[w]) / cpu_means.front());
    }
    std::printf("training %s %s, window means GPU/CPU:%s (worst gap %.3f of the initial loss)\n", encoding.c_str(),
                precision_name(precision), line.c_str(), worst);
    INFO(precision_name(precision) << " window means GPU/CPU:" << line);
    CHECK(worst <= tol);
  }
}

TEST_CASE("GPU failures end with a one-line pathbench::Error", "[cuda]") {
  // Out of device memory: the allocation names what it was for and how much.
  try {
    DeviceBuffer<float> huge(size_t(1) << 48, "a test tensor");
    FAIL("allocating 1 PiB of device memory did not fail");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.find("a test tensor") != std::string::npos);
    CHECK(what.find('\n') == std::string::npos);
  }
  // A bad token is rejected before any device work, and the backend stays usable.
  const ModelConfig config = small_training_config(cuda_encodings().front());
  auto backend = make_training_backend(config, small_training_setup(), {"cuda", Precision::fp32, true});
  TokenBatch bad = make_batch(2, 16, 8, 400, true);
  bad.tokens[5] = 8;
  CHECK_THROWS_AS(backend->step(bad), Error);
  CHECK(std::isfinite(backend->step(make_batch(2, 16, 8, 401, true)).loss));
  // A product of negative size is rejected before cuBLAS sees it (which would print its own log
  // line), naming the op and the shapes.
  cuda::Context ctx(Precision::fp32);
  DeviceBuffer<float> small(16, "a test tensor");
  const cuda::WeightRef w{small.data(), nullptr, small.data()};
  CHECK_THROWS_WITH(cuda::linear_forward(ctx, {small.data()}, w, small.data(), -1, 4, 4),
                    Catch::Contains("linear_forward: matrix product C[-1, 4]") &&
                        Catch::Contains("sizes must be >= 0"));
}

}  // namespace
}  // namespace pathbench
#endif  // PATHBENCH_WITH_CUDA
