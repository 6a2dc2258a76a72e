// Helpers shared by the CUDA tests: seeded random host data, host/device copies, NaN-poisoned device
// outputs, per-precision tolerances, token batches and a small training setup (relative errors come
// from test_support.h). Only in CUDA builds.
#pragma once
#ifdef PATHBENCH_WITH_CUDA
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "core/attention/registry.h"
#include "core/cuda/buffer.h"
#include "core/cuda/context.h"
#include "core/model/batch.h"
#include "core/model/model_config.h"
#include "core/optim/training_backend.h"
#include "core/precision.h"
#include "core/rng.h"
#include "tests/test_support.h"

namespace pathbench::cuda_testing {

using cuda::DeviceBuffer;
using testing::relative_error;

inline std::vector<float> randn(size_t n, uint64_t seed, double scale = 1.0, double offset = 0.0) {
  CounterRng rng(seed, "cuda-test");
  std::vector<float> v(n);
  for (auto& x : v) x = float(offset + scale * rng.normal());
  return v;
}

inline std::vector<int32_t> random_tokens(size_t n, int64_t vocab, uint64_t seed) {
  CounterRng rng(seed, "cuda-test-tokens");
  std::vector<int32_t> v(n);
  for (auto& x : v) x = int32_t(rng.below(uint64_t(vocab)));
  return v;
}

template <typename T>
inline std::vector<double> to_double(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

template <typename T>
DeviceBuffer<T> to_device(const std::vector<T>& host, cudaStream_t s) {
  DeviceBuffer<T> d(std::max<size_t>(host.size(), 1), "test input");
  cuda::copy_to_device(d.data(), host.data(), host.size(), s);
  return d;
}

// A device array filled with NaN (all bits set), so elements a kernel fails to write show up.
inline DeviceBuffer<float> poisoned(size_t n, cudaStream_t s) {
  DeviceBuffer<float> d(std::max<size_t>(n, 1), "test output");
  PATHBENCH_CUDA_CHECK(cudaMemsetAsync(d.data(), 0xff, n * sizeof(float), s));
  PATHBENCH_CUDA_CHECK(cudaStreamSynchronize(s));
  return d;
}

// The first n elements of a device array (a buffer, or any device pointer).
template <typename T>
inline std::vector<T> to_host(const T* d, size_t n, cudaStream_t s) {
  std::vector<T> h(n);
  cuda::copy_to_host(h.data(), d, n, s);
  return h;
}
template <typename T>
inline std::vector<T> to_host(const DeviceBuffer<T>& d, size_t n, cudaStream_t s) {
  return to_host(d.data(), n, s);
}

inline constexpr double kFp32Tolerance = 1e-5;

// The encodings with a GPU implementation.
inline std::vector<std::string> cuda_encodings() {
  std::vector<std::string> names;
  for (const auto& e : encoding_registry())
    if (e.make_cuda_float) names.push_back(e.name);
  return names;
}

inline double product_tolerance(Precision p) {
  switch (p) {
    case Precision::tf32: return 2e-3;
    case Precision::bf16: return 1e-2;
    case Precision::fp32: break;
  }
  return kFp32Tolerance;
}

// Rounds to bf16 and back: what the GPU sees of an input stored in bf16.
inline std::vector<float> bf16_rounded(const std::vector<float>& v) {
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
inline std::vector<float> to_host_float(const S* d, size_t n, cudaStream_t s) {
  const std::vector<S> h = to_host(d, n, s);
  return std::vector<float>(h.begin(), h.end());
}
template <typename S>
inline std::vector<float> to_host_float(const DeviceBuffer<S>& d, size_t n, cudaStream_t s) {
  return to_host_float(d.data(), n, s);
}

template <typename S>
DeviceBuffer<S> poisoned_as(size_t n, cudaStream_t s) {
  DeviceBuffer<S> d(std::max<size_t>(n, 1), "test output");
  PATHBENCH_CUDA_CHECK(cudaMemsetAsync(d.data(), 0xff, n * sizeof(S), s));  // NaN in fp32 and bf16
  return d;
}

// Multiplies every value by (1 + u·ξ), ξ uniform in [−1, 1]: a change of at most one unit roundoff u.
inline void perturb(std::vector<double>& v, CounterRng& rng, double u) {
  for (auto& x : v) x *= 1.0 + u * (2.0 * rng.uniform() - 1.0);
}


inline TokenBatch make_batch(int64_t b, int64_t t, int64_t vocab, uint64_t seed, bool copy_previous) {
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
inline double unit_roundoff(Precision p) {
  switch (p) {
    case Precision::tf32: return std::ldexp(1.0, -11);
    case Precision::bf16: return std::ldexp(1.0, -8);
    case Precision::fp32: break;
  }
  return 0.0;
}

// How far each gradient tensor of the float64 model moves when every parameter changes by up to one

inline ModelConfig small_training_config(const std::string& encoding) {
  ModelConfig config;
  config.n_layers = 1;
  config.d_model = 64;
  config.n_heads = 2;
  config.vocab_size = 8;
  config.mlp = "gelu";
  config.encoding = encoding;
  return ModelConfig::from_json(config.to_json(), "test model");
}

inline TrainingSetup small_training_setup() {
  TrainingSetup setup;
  setup.adamw = AdamWConfig{0.9, 0.98, 1e-8, 0.1};
  setup.schedule = LrSchedule{3e-3, 20, 200, 0.1};
  setup.clip_norm = 1.0;
  setup.init_seed = 3;
  return setup;
}

}  // namespace pathbench::cuda_testing
#endif  // PATHBENCH_WITH_CUDA
