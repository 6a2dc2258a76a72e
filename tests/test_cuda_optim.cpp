// The GPU AdamW update with global-norm clipping against the CPU optimizer. Run with `pathbench_tests --require-gpu "[cuda]"`.
#ifdef PATHBENCH_WITH_CUDA
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "core/cuda/context.h"
#include "core/optim/adamw.h"
#include "core/optim/cuda/adamw.h"
#include "core/params/cuda/parameters.h"
#include "tests/cuda_test_support.h"
#include "tests/test_support.h"

namespace pathbench {
namespace {

using namespace cuda_testing;

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
    CHECK(relative_error(to_host(grads_d, p, s), to_double(cpu.grads())) <= 1e-6);
  }
  ParameterSet<float> back = cpu;
  gpu.download(back);
  CHECK(relative_error(back.values(), to_double(cpu.values())) <= 1e-6);
  CHECK(relative_error(to_host(m, p, s), to_double(opt.first_moment())) <= 1e-6);
  CHECK(relative_error(to_host(v, p, s), to_double(opt.second_moment())) <= 1e-6);
  // The bf16 shadow follows the values.
  std::vector<cuda::bf16> shadow(p);
  cuda::copy_to_host(shadow.data(), gpu.values_bf16(), p, s);
  std::vector<float> shadow_f(shadow.begin(), shadow.end());
  CHECK(relative_error(shadow_f, to_double(cpu.values())) <= 4e-3);
}

}  // namespace
}  // namespace pathbench
#endif  // PATHBENCH_WITH_CUDA
