// Conformance of the CUDA attention kernels ([cuda]; run with `pathbench_tests --require-gpu "[cuda]"`):
// forward outputs and input gradients of every encoding's kernels on the GPU against the CPU
// implementation (softmax attention, RoPE) or float64 brute force (stick-breaking, PaTH), on fresh
// random inputs, across ragged T (T = 1 included), head dims 16–128 and several batch·head counts,
// in fp32 (relative error ≤ 1e-5) and bf16 storage (≤ 1e-2; references take the same bf16-rounded
// inputs). Every output and the workspace are poisoned with NaN first, so unwritten elements fail.
// Then every registered attention op's GPU implementation (op_registry.h, as bench-attention runs
// it) against the same op's CPU implementation in float64. Kernels with a Hopper form (core/cuda/
// hopper.h) are checked in both forms on an H100/H200.
#ifdef PATHBENCH_WITH_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "core/attention/cuda/gpu_op.h"
#include "core/attention/op_registry.h"
#include "core/attention/path/cuda/path_kernels.h"
#include "core/attention/rope/rope.h"
#include "core/attention/rope/cuda/rope_kernels.h"
#include "core/attention/sba/cuda/sba_kernels.h"
#include "core/attention/softmax/softmax_attention.h"
#include "core/attention/softmax/cuda/softmax_kernels.h"
#include "core/cuda/buffer.h"
#include "core/cuda/hopper.h"
#include "core/error.h"
#include "core/rng.h"
#include "tests/attention_reference.h"
#include "tests/test_support.h"

namespace pathbench {
namespace {

using cuda::bf16;
using Host = std::vector<double>;
using testing::relative_error;

// Runs body once per kernel form this GPU runs: the Hopper forms where available, then the portable
// ones; the default (Hopper where available) is back afterwards, even when a check throws.
template <typename F>
void for_each_kernel_form(F&& body) {
  for (const bool hopper : {true, false}) {
    if (hopper && !cuda::hopper_kernels_available()) continue;
    const cuda::ScopedHopperKernels form(hopper);
    INFO((hopper ? "Hopper kernels" : "portable kernels"));
    body();
  }
}

void check(cudaError_t e) { REQUIRE(e == cudaSuccess); }

double stored(double x, float) { return double(float(x)); }
double stored(double x, bf16) { return double(__bfloat162float(__float2bfloat16(float(x)))); }

// A device array of T (float or bf16), NaN-poisoned at birth, with float64 host copies in and out.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : buf_(std::max<size_t>(n, 1), "test tensor"), n_(n) { poison(); }
  void poison() { check(cudaMemset(buf_.data(), 0xff, buf_.size() * sizeof(T))); }
  void upload(const Host& h) { cuda::copy_to_device_as(buf_.data(), h.data(), n_, nullptr); }
  Host download() const {
    check(cudaDeviceSynchronize());
    Host h(n_);
    cuda::copy_to_host_as(h.data(), buf_.data(), n_, nullptr);
    return h;
  }
  T* get() { return buf_.data(); }

 private:
  cuda::DeviceBuffer<T> buf_;
  size_t n_;
};

// Caller-owned scratch for the kernels, poisoned like the outputs.
class DeviceWorkspace {
 public:
  explicit DeviceWorkspace(size_t bytes) : buf_(std::max<size_t>(bytes, 1), "test workspace"), bytes_(bytes) {
    check(cudaMemset(buf_.data(), 0xff, buf_.size()));
  }
  cuda::Workspace get() { return {buf_.data(), bytes_}; }
  // count values of type T from byte offset on.
  template <typename T>
  std::vector<T> read(size_t offset, size_t count) const {
    std::vector<T> h(count);
    check(cudaMemcpy(h.data(), buf_.data() + offset, count * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  cuda::DeviceBuffer<char> buf_;
  size_t bytes_;
};

// Normal random values rounded to the storage type S (the references see exactly what the GPU sees).
template <typename S>
Host random_values(size_t n, CounterRng& rng, double sd = 1.0) {
  Host h(n);
  for (auto& x : h) x = stored(sd * rng.normal(), S());
  return h;
}
// Cumulative log forget gates c_t = Σ log σ(x_t), x_t ~ N(mean, sd²), one run per slice.
Host random_gates(int64_t bh, int64_t T, CounterRng& rng, double mean = 2.0, double sd = 1.0) {
  Host c(bh * T);
  for (int64_t h = 0; h < bh; ++h) {
    double acc = 0;
    for (int64_t t = 0; t < T; ++t)
      c[h * T + t] = double(float(acc -= std::log1p(std::exp(-(sd * rng.normal() + mean)))));
  }
  return c;
}

template <typename S>
constexpr double kTolerance = std::is_same_v<S, float> ? 1e-5 : 1e-2;
template <typename S>
const char* precision_name() {
  return std::is_same_v<S, float> ? "fp32" : "bf16";
}

#define CHECK_CLOSE_WITHIN(name, got, ref, tolerance)                 \
  do {                                                                \
    const double err_ = relative_error(got, ref);                     \
    INFO(name << " relative error " << err_);                        \
    CHECK(err_ <= (tolerance));                                       \
  } while (0)
#define CHECK_CLOSE(name, got, ref) CHECK_CLOSE_WITHIN(name, got, ref, kTolerance<S>)

struct Shape {
  int64_t bh, T, D;
};
// Ragged lengths (not multiples of the 64-row blocks), T = 1, every head dim, 1–3 slices.
const std::vector<Shape> kShapes = {{2, 1, 16},  {3, 37, 16},  {2, 64, 32},  {1, 130, 32},
                                    {2, 200, 64}, {3, 257, 64}, {1, 1, 128}, {2, 150, 128}};

// What the random PaTH inputs look like. The defaults are mild; the extreme regime is what a trained
// PaTH-FoX layer can reach: sharp logits (q, k with sd 3), gates that forget up to ~10 nats per token,
// β at the clip limit 2 − 10⁻³ for every other token (near-reflections), and, over a small vocabulary
// as in MQRAR's first layer, w rows drawn from a few distinct directions (repeated reflections).
struct PathRegime {
  double qk_sd = 1.0, gate_mean = 2.0, gate_sd = 1.0;
  bool beta_at_clip = false;
  int64_t distinct_w = 0;  // 0: every w row its own direction; k: each row one of the first k rows
  // bf16's bound on the relative error: logits of ±30 (sharp q, k) carry the bf16 rounding of the
  // moved queries and keys into the softmax weights, which the default bound does not allow for
  double bf16_tolerance = kTolerance<bf16>;
  double constant_beta = 0;  // > 0: every β takes this value (with distinct_w 1: a run of one repeated token)
  // bf16's bound on dw and dβ where it differs from the others (0: the same)
  double householder_grad_bf16_tolerance = 0;
};

// Unit rows w [BH, T, D] (unit after rounding to S: the kernels get exactly these) and β = 2σ(ξ)
// [BH, T] in (0, 2) (with beta_at_clip, every other β is 2 − 10⁻³), rounded to float.
template <typename S>
std::pair<Host, Host> random_householder(const Shape& sh, CounterRng& rng, const PathRegime& regime = {}) {
  const int64_t rows = sh.bh * sh.T;
  Host w = random_values<S>(size_t(rows * sh.D), rng), beta(rows);
  for (int64_t r = 0; r < rows; ++r) {
    double norm = 0;
    for (int64_t x = 0; x < sh.D; ++x) norm += w[r * sh.D + x] * w[r * sh.D + x];
    for (int64_t x = 0; x < sh.D; ++x) w[r * sh.D + x] = stored(w[r * sh.D + x] / std::sqrt(norm), S());
    beta[r] = double(float(regime.beta_at_clip && r % 2 == 0 ? 2.0 - 1e-3 : 2.0 / (1.0 + std::exp(-rng.normal()))));
    if (regime.constant_beta > 0) beta[r] = double(float(regime.constant_beta));
  }
  if (regime.distinct_w > 0)
    for (int64_t r = regime.distinct_w; r < rows; ++r)
      std::copy_n(&w[int64_t(rng.below(uint64_t(regime.distinct_w))) * sh.D], sh.D, &w[r * sh.D]);
  return {w, beta};
}

// ---- softmax attention (nope, fox) and RoPE --------------------------------------------------------

template <typename S>
void check_softmax(const Shape& sh, bool with_gate, uint64_t seed) {
  INFO(precision_name<S>() << " BH " << sh.bh << " T " << sh.T << " D " << sh.D << " gate " << with_gate);
  CounterRng rng(seed, "softmax");
  const size_t n = sh.bh * sh.T * sh.D, rows = sh.bh * sh.T;
  const Host q = random_values<S>(n, rng), k = random_values<S>(n, rng), v = random_values<S>(n, rng);
  const Host d_o = random_values<S>(n, rng), gate = random_gates(sh.bh, sh.T, rng);
  const double scale = 1.0 / std::sqrt(double(sh.D)), gate_scale = 0.9;

  SoftmaxAttentionArgs<double> ref{sh.bh, sh.T, sh.D, scale, q.data(), k.data(), v.data(),
                                   with_gate ? gate.data() : nullptr, gate_scale};
  Host o_ref(n), lse_ref(rows), dq_ref(n), dk_ref(n), dv_ref(n), dg_ref(rows);
  softmax_attention_forward(ref, o_ref.data(), lse_ref.data());
  softmax_attention_backward(ref, o_ref.data(), lse_ref.data(), d_o.data(), dq_ref.data(), dk_ref.data(),
                             dv_ref.data(), with_gate ? dg_ref.data() : nullptr);

  DeviceArray<S> dq_in(n), dk_in(n), dv_in(n), ddo(n), o(n), dq(n), dk(n), dv(n);
  DeviceArray<float> dgate(rows), lse(rows), dg(rows);
  dq_in.upload(q), dk_in.upload(k), dv_in.upload(v), ddo.upload(d_o), dgate.upload(gate);
  cuda::SoftmaxAttentionCudaArgs<S> a{sh.bh, sh.T, sh.D, float(scale), dq_in.get(), dk_in.get(), dv_in.get(),
                                      with_gate ? dgate.get() : nullptr, float(gate_scale)};
  cuda::softmax_attention_forward(a, o.get(), lse.get(), nullptr);
  DeviceWorkspace ws(cuda::softmax_attention_backward_workspace_bytes(a));
  cuda::softmax_attention_backward(a, o.get(), lse.get(), ddo.get(), dq.get(), dk.get(), dv.get(),
                                   with_gate ? dg.get() : nullptr, ws.get(), nullptr);
  CHECK_CLOSE("o", o.download(), o_ref);
  CHECK_CLOSE("lse", lse.download(), lse_ref);
  CHECK_CLOSE("dq", dq.download(), dq_ref);
  CHECK_CLOSE("dk", dk.download(), dk_ref);
  CHECK_CLOSE("dv", dv.download(), dv_ref);
  if (with_gate) CHECK_CLOSE("d_cum_log_gate", dg.download(), dg_ref);
}

template <typename S>
void check_rope(const Shape& sh, bool inverse, uint64_t seed) {
  INFO(precision_name<S>() << " BH " << sh.bh << " T " << sh.T << " D " << sh.D << " inverse " << inverse);
  CounterRng rng(seed, "rope");
  const size_t n = sh.bh * sh.T * sh.D;
  const Host x = random_values<S>(n, rng), y = random_values<S>(n, rng);
  Host ref = x, ref_y = y;
  rope_rotate(ref.data(), sh.bh, sh.T, sh.D, 500.0, inverse, 3);
  rope_rotate(ref_y.data(), sh.bh, sh.T, sh.D, 500.0, inverse, 3);
  DeviceArray<S> dx(n), copy(n), dy(n), pair_x(n), pair_y(n);
  dx.upload(x);
  dy.upload(y);
  cuda::rope_rotate_copy<S>(dx.get(), copy.get(), sh.bh, sh.T, sh.D, 500.0, inverse, 3, nullptr);
  CHECK_CLOSE("rotated copy", copy.download(), ref);
  cuda::rope_rotate_copy_pair<S>(dx.get(), pair_x.get(), dy.get(), pair_y.get(), sh.bh, sh.T, sh.D, 500.0, inverse, 3,
                                 nullptr);
  CHECK_CLOSE("rotated copies of a pair: first", pair_x.download(), ref);
  CHECK_CLOSE("rotated copies of a pair: second", pair_y.download(), ref_y);
  cuda::rope_rotate_copy_pair<S>(dx.get(), dx.get(), dy.get(), dy.get(), sh.bh, sh.T, sh.D, 500.0, inverse, 3,
                                 nullptr);
  CHECK_CLOSE("pair rotated in place: first", dx.download(), ref);
  CHECK_CLOSE("pair rotated in place: second", dy.download(), ref_y);
  dx.upload(x);
  cuda::rope_rotate(dx.get(), sh.bh, sh.T, sh.D, 500.0, inverse, 3, nullptr);
  CHECK_CLOSE("rotated in place", dx.download(), ref);
}

// ---- stick-breaking ---------------------------------------------------------------------------------

// Normal inputs, where a row's softplus sum passes 128 bits about 110 keys back, so the forward stops
// there; far_reaching shifts q by +c and k by −c (s·c²·D = 6), so that s·q·k ≈ −6, sticks break
// rarely (≈ 0.01 bits a key) and no key block's weights vanish. Returns the forward's first key
// block of each query block ([BH, ⌈T/64⌉], sba_kernels.h's saved values).
template <typename S>
std::vector<int> check_sba(const Shape& sh, bool remainder, uint64_t seed, bool far_reaching = false) {
  INFO(precision_name<S>() << " BH " << sh.bh << " T " << sh.T << " D " << sh.D << " remainder " << remainder
                           << " far-reaching " << far_reaching);
  CounterRng rng(seed, "sba");
  const size_t n = sh.bh * sh.T * sh.D;
  Host q = random_values<S>(n, rng), k = random_values<S>(n, rng);
  const Host v = random_values<S>(n, rng), d_o = random_values<S>(n, rng);
  const double scale = 1.0 / std::sqrt(double(sh.D));
  if (far_reaching) {
    const double c = std::sqrt(6.0 / (scale * double(sh.D)));
    for (size_t i = 0; i < n; ++i) q[i] = stored(q[i] + c, S()), k[i] = stored(k[i] - c, S());
  }
  const reference::AttentionShape rs{sh.bh, sh.T, sh.D};
  Host o_ref(n), dq_ref(n), dk_ref(n), dv_ref(n);
  reference::stick_breaking_forward(rs, scale, remainder, q.data(), k.data(), v.data(), o_ref.data());
  reference::stick_breaking_backward(rs, scale, remainder, q.data(), k.data(), v.data(), d_o.data(), dq_ref.data(),
                                     dk_ref.data(), dv_ref.data());

  DeviceArray<S> dq_in(n), dk_in(n), dv_in(n), ddo(n), o(n), dq(n), dk(n), dv(n);
  dq_in.upload(q), dk_in.upload(k), dv_in.upload(v), ddo.upload(d_o);
  cuda::StickBreakingCudaArgs<S> a{sh.bh, sh.T, sh.D, float(scale), dq_in.get(), dk_in.get(), dv_in.get(), remainder};
  DeviceWorkspace saved(cuda::stick_breaking_saved_bytes(a)), ws(cuda::stick_breaking_backward_workspace_bytes(a));
  cuda::stick_breaking_forward(a, o.get(), saved.get(), nullptr);
  cuda::stick_breaking_backward(a, saved.get(), ddo.get(), dq.get(), dk.get(), dv.get(), ws.get(), nullptr);
  CHECK_CLOSE("o", o.download(), o_ref);
  CHECK_CLOSE("dq", dq.download(), dq_ref);
  CHECK_CLOSE("dk", dk.download(), dk_ref);
  CHECK_CLOSE("dv", dv.download(), dv_ref);
  const size_t blocks = sh.bh * ((sh.T + 63) / 64);
  return saved.read<int>(2 * sh.bh * sh.T * sizeof(float), blocks);
}

// ---- PaTH and PaTH-FoX ------------------------------------------------------------------------------

// Random PaTH inputs of one shape and regime (span_chunks: the backward's chunks per span, 0: its
// own choice) on the GPU, with the kernels' outputs after run().
template <typename S>
struct PathCase {
  Shape sh;
  bool with_gate;
  size_t n, rows;
  CounterRng rng;
  Host q, k, v, d_o, gate;
  std::pair<Host, Host> w_beta;  // w [BH, T, D], β [BH, T]
  reference::PathInputs in;
  DeviceArray<S> dq_in, dk_in, dv_in, dw_in, ddo, o, dq, dk, dv, dw;
  DeviceArray<float> dbeta_in, dgate, lse, db, dg;
  cuda::PathAttentionCudaArgs<S> a;
  DeviceWorkspace fws, bws;

  PathCase(const Shape& shape, bool gated, uint64_t seed, int64_t span_chunks, const PathRegime& regime)
      : sh(shape), with_gate(gated), n(sh.bh * sh.T * sh.D), rows(sh.bh * sh.T), rng(seed, "path"),
        q(random_values<S>(n, rng, regime.qk_sd)), k(random_values<S>(n, rng, regime.qk_sd)),
        v(random_values<S>(n, rng)), d_o(random_values<S>(n, rng)),
        gate(random_gates(sh.bh, sh.T, rng, regime.gate_mean, regime.gate_sd)),
        w_beta(random_householder<S>(sh, rng, regime)),
        in{q.data(), k.data(), v.data(), w_beta.first.data(), w_beta.second.data(), with_gate ? gate.data() : nullptr,
           1.0 / std::sqrt(double(sh.D)), 0.9},
        dq_in(n), dk_in(n), dv_in(n), dw_in(n), ddo(n), o(n), dq(n), dk(n), dv(n), dw(n), dbeta_in(rows), dgate(rows),
        lse(rows), db(rows), dg(rows),
        a{sh.bh,       sh.T,        sh.D,        float(in.scale),
          dq_in.get(), dk_in.get(), dv_in.get(), dw_in.get(),
          dbeta_in.get(), with_gate ? dgate.get() : nullptr, float(in.gate_scale),
          span_chunks},
        fws(cuda::path_attention_forward_workspace_bytes(a)),
        bws(cuda::path_attention_backward_workspace_bytes(a)) {
    dq_in.upload(q), dk_in.upload(k), dv_in.upload(v), dw_in.upload(w_beta.first), ddo.upload(d_o);
    dbeta_in.upload(w_beta.second), dgate.upload(gate);
  }
  void run() {
    cuda::path_attention_forward(a, o.get(), lse.get(), fws.get(), nullptr);
    cuda::path_attention_backward(a, o.get(), lse.get(), fws.get(), ddo.get(), dq.get(), dk.get(), dv.get(), dw.get(),
                                  db.get(), with_gate ? dg.get() : nullptr, bws.get(), nullptr);
  }
  // o, dq, dk, dv, dw, dβ and (gated) the gate gradient, downloaded.
  std::vector<Host> outputs() {
    std::vector<Host> out{o.download(), dq.download(), dk.download(), dv.download(), dw.download(), db.download()};
    if (with_gate) out.push_back(dg.download());
    return out;
  }
};

template <typename S>
void check_path(const Shape& sh, bool with_gate, uint64_t seed, int64_t span_chunks = 0, PathRegime regime = {}) {
  INFO(precision_name<S>() << " BH " << sh.bh << " T " << sh.T << " D " << sh.D << " gate " << with_gate
                           << " span " << span_chunks << " qk sd " << regime.qk_sd << " gate x ~ N("
                           << regime.gate_mean << ", " << regime.gate_sd << "²) beta at clip " << regime.beta_at_clip
                           << " distinct w " << regime.distinct_w);
  PathCase<S> c(sh, with_gate, seed, span_chunks, regime);
  const reference::AttentionShape rs{sh.bh, sh.T, sh.D};
  const size_t n = c.n, rows = c.rows;
  Host o_ref(n), lse_ref(rows), dq_ref(n), dk_ref(n), dv_ref(n), dw_ref(n), db_ref(rows), dg_ref(rows);
  reference::path_forward(rs, c.in, o_ref.data(), lse_ref.data());
  reference::path_backward(rs, c.in, o_ref.data(), lse_ref.data(), c.d_o.data(), dq_ref.data(), dk_ref.data(),
                           dv_ref.data(), dw_ref.data(), db_ref.data(), with_gate ? dg_ref.data() : nullptr);
  c.run();
  const double tolerance = std::is_same_v<S, float> ? kTolerance<S> : regime.bf16_tolerance;
  CHECK_CLOSE_WITHIN("o", c.o.download(), o_ref, tolerance);
  CHECK_CLOSE_WITHIN("lse", c.lse.download(), lse_ref, tolerance);
  CHECK_CLOSE_WITHIN("dq", c.dq.download(), dq_ref, tolerance);
  CHECK_CLOSE_WITHIN("dk", c.dk.download(), dk_ref, tolerance);
  CHECK_CLOSE_WITHIN("dv", c.dv.download(), dv_ref, tolerance);
  const double householder_tolerance =
      std::is_same_v<S, float> || regime.householder_grad_bf16_tolerance == 0 ? tolerance
                                                                              : regime.householder_grad_bf16_tolerance;
  CHECK_CLOSE_WITHIN("dw", c.dw.download(), dw_ref, householder_tolerance);
  CHECK_CLOSE_WITHIN("dbeta", c.db.download(), db_ref, householder_tolerance);
  if (with_gate) CHECK_CLOSE_WITHIN("d_cum_log_gate", c.dg.download(), dg_ref, tolerance);
}

// The same inputs through the PaTH forward and backward `reps` times: every pass must give what the
// first gave, up to the order of the backward's atomic adds (bf16: an output rounded either way), and
// nothing non-finite. A pass that differs by more reads memory before it is written: a race, the kind
// of fault that strikes one training step in thousands.
template <typename S>
void check_path_repeats(const Shape& sh, bool with_gate, uint64_t seed, int64_t span_chunks, const PathRegime& regime,
                        int reps) {
  INFO(precision_name<S>() << " BH " << sh.bh << " T " << sh.T << " D " << sh.D << " gate " << with_gate << " span "
                           << span_chunks << " distinct w " << regime.distinct_w << ", " << reps << " passes");
  PathCase<S> c(sh, with_gate, seed, span_chunks, regime);
  c.run();
  const std::vector<Host> first = c.outputs();
  double worst = 0;
  int worst_pass = 0;
  size_t non_finite = 0;
  for (int pass = 1; pass < reps; ++pass) {
    c.run();
    const std::vector<Host> again = c.outputs();
    for (size_t i = 0; i < again.size(); ++i) {
      for (double x : again[i]) non_finite += std::isfinite(x) ? 0 : 1;
      const double e = relative_error(again[i], first[i]);
      if (!(e <= worst)) worst = e, worst_pass = pass;
    }
  }
  INFO("largest relative difference from the first pass " << worst << " (pass " << worst_pass << ")");
  WARN("PaTH repeat check " << precision_name<S>() << ": largest relative difference " << worst);
  CHECK(non_finite == 0);
  CHECK(worst <= (std::is_same_v<S, float> ? 1e-4 : 1e-2));
}

// ---- every registered op's GPU implementation (op_registry.h) against its CPU implementation -------

// bf16: looser than the per-kernel checks above, whose references read the same bf16-rounded
// intermediates the kernels do: an op also rounds intermediates the float64 CPU op keeps exact
// (RoPE's rotated queries and keys, stored in bf16 before the attention kernels read them).
template <typename S>
constexpr double kOpTolerance = std::is_same_v<S, float> ? 1e-5 : 3e-2;

template <typename S>
const cuda::GpuOp<S>& gpu_of(const AttentionOpInfo& op) {
  if constexpr (std::is_same_v<S, float>)
    return *op.gpu_float;
  else
    return *op.gpu_bf16;
}

template <typename S>
void check_gpu_op(const AttentionOpInfo& op, const Shape& sh, const OpSettings& settings, uint64_t seed) {
  INFO(op.name << " " << precision_name<S>() << " BH " << sh.bh << " T " << sh.T << " D " << sh.D);
  CounterRng rng(seed, "gpu op");
  const size_t n = sh.bh * sh.T * sh.D, rows = sh.bh * sh.T;
  const Host q = random_values<S>(n, rng), k = random_values<S>(n, rng), v = random_values<S>(n, rng);
  const Host d_o = random_values<S>(n, rng), gate = random_gates(sh.bh, sh.T, rng);
  const auto [w, beta] = random_householder<S>(sh, rng);
  const double scale = 1.0 / std::sqrt(double(sh.D));

  Host o_ref(n), dq_ref(n), dk_ref(n), dv_ref(n), dw_ref(n), db_ref(rows), dg_ref(rows);
  OpTensors<double> ref;
  ref.batch_heads = sh.bh, ref.length = sh.T, ref.head_dim = sh.D, ref.scale = scale;
  ref.q = q.data(), ref.k = k.data(), ref.v = v.data(), ref.d_o = d_o.data();
  ref.o = o_ref.data(), ref.dq = dq_ref.data(), ref.dk = dk_ref.data(), ref.dv = dv_ref.data();
  if (op.householder) ref.w = w.data(), ref.beta = beta.data(), ref.dw = dw_ref.data(), ref.dbeta = db_ref.data();
  if (op.gated) ref.cum_gate = gate.data(), ref.d_cum_gate = dg_ref.data();
  op.cpu_double(settings, ref);

  DeviceArray<S> dq_in(n), dk_in(n), dv_in(n), dw_in(n), ddo(n), o(n), dq(n), dk(n), dv(n), dw(n);
  DeviceArray<float> dbeta_in(rows), dgate(rows), db(rows), dg(rows);
  dq_in.upload(q), dk_in.upload(k), dv_in.upload(v), dw_in.upload(w), ddo.upload(d_o);
  dbeta_in.upload(beta), dgate.upload(gate);
  cuda::GpuOpTensors<S> t;
  t.batch_heads = sh.bh, t.length = sh.T, t.head_dim = sh.D, t.scale = float(scale);
  t.q = dq_in.get(), t.k = dk_in.get(), t.v = dv_in.get(), t.d_o = ddo.get();
  t.o = o.get(), t.dq = dq.get(), t.dk = dk.get(), t.dv = dv.get();
  if (op.householder) t.w = dw_in.get(), t.beta = dbeta_in.get(), t.dw = dw.get(), t.dbeta = db.get();
  if (op.gated) t.cum_gate = dgate.get(), t.d_cum_gate = dg.get();
  const cuda::GpuOp<S>& gpu = gpu_of<S>(op);
  DeviceWorkspace fws(gpu.forward_workspace_bytes(settings, t)), bws(gpu.backward_workspace_bytes(settings, t));
  gpu.forward(settings, t, fws.get(), nullptr);
  gpu.backward(settings, t, fws.get(), bws.get(), nullptr);

  std::vector<std::tuple<const char*, Host, const Host*>> results = {
      {"o", o.download(), &o_ref}, {"dq", dq.download(), &dq_ref}, {"dk", dk.download(), &dk_ref},
      {"dv", dv.download(), &dv_ref}};
  if (op.householder) {
    results.push_back({"dw", dw.download(), &dw_ref});
    results.push_back({"dbeta", db.download(), &db_ref});
  }
  if (op.gated) results.push_back({"d_cum_gate", dg.download(), &dg_ref});
  for (const auto& [name, got, want] : results) {
    const double err = relative_error(got, *want);
    INFO(name << " relative error " << err);
    CHECK(err <= kOpTolerance<S>);
  }
}

}  // namespace

TEST_CASE("every registered attention op's GPU implementation matches its CPU implementation", "[cuda]") {
  OpSettings settings;
  settings.gate_scale = 0.9;
  settings.rope_base = 500;
  uint64_t seed = 600;
  size_t checked = 0;
  for (const auto& op : attention_ops()) checked += op.gpu_float ? 1 : 0;
  for_each_kernel_form([&] {
    for (const auto& op : attention_ops()) {
      if (!op.gpu_float) continue;
      for (const auto& sh : kShapes) {
        if (!op.head_dim_problem(sh.D).empty()) continue;
        settings.remainder_to_current = seed % 4 == 0;
        check_gpu_op<float>(op, sh, settings, seed++);
        check_gpu_op<bf16>(op, sh, settings, seed++);
      }
    }
  });
  CHECK(checked >= 6);  // every built-in op has a GPU implementation
}

TEST_CASE("CUDA softmax attention (nope, fox) matches the CPU kernel", "[cuda]") {
  for_each_kernel_form([] {
    uint64_t seed = 1;
    for (const auto& sh : kShapes)
      for (bool gate : {false, true}) {
        check_softmax<float>(sh, gate, seed++);
        check_softmax<bf16>(sh, gate, seed++);
      }
    // The Hopper backward at D = 128 takes key blocks in pairs: 11 blocks, the last pair's second absent.
    for (bool gate : {false, true}) check_softmax<bf16>({2, 700, 128}, gate, seed++);
  });
}

TEST_CASE("an H100/H200 runs the Hopper kernels when the build holds sm_90a code", "[cuda]") {
  int device = 0, major = 0, minor = 0;
  REQUIRE(cudaGetDevice(&device) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess);
#ifdef PATHBENCH_CUDA_SM90A
  CHECK(cuda::hopper_kernels_built());
  CHECK(cuda::hopper_kernels_available() == (major == 9 && minor == 0));
#else
  CHECK_FALSE(cuda::hopper_kernels_built());
  CHECK_FALSE(cuda::hopper_kernels_available());
#endif
  {
    const cuda::ScopedHopperKernels off(false);
    CHECK_FALSE(cuda::hopper_kernels());
    const int64_t before = cuda::hopper_launches();
    check_softmax<bf16>({2, 200, 64}, true, 700);
    check_path<bf16>({1, 300, 64}, true, 702, 2);
    CHECK(cuda::hopper_launches() == before);  // the portable forms ran
  }
  CHECK(cuda::hopper_kernels() == cuda::hopper_kernels_available());
  if (cuda::hopper_kernels_available()) {  // the forward and the backward each launch their Hopper form
    const int64_t before = cuda::hopper_launches();
    check_softmax<bf16>({2, 200, 64}, true, 701);
    CHECK(cuda::hopper_launches() == before + 2);
    // PaTH at D = 64: the forward's span transforms, key movers and its pass over the pairs across
    // spans (which moves the queries too); the backward's cross-span pairs, in-span scan, span
    // gradients, and local a and local b as one kernel (the prep, the forward's in-span scan and the
    // query chain stay portable)
    check_path<bf16>({2, 600, 64}, true, 703, 3);
    CHECK(cuda::hopper_launches() == before + 2 + 7);
  }
}

TEST_CASE("CUDA RoPE rotation matches the CPU kernel", "[cuda]") {
  uint64_t seed = 100;
  // kShapes take the vector path (four pairs per access); D = 6 and 12 the scalar one.
  std::vector<Shape> shapes = kShapes;
  shapes.push_back({2, 70, 6});
  shapes.push_back({1, 33, 12});
  for (const auto& sh : shapes)
    for (bool inverse : {false, true}) {
      check_rope<float>(sh, inverse, seed++);
      check_rope<bf16>(sh, inverse, seed++);
    }
}

TEST_CASE("CUDA stick-breaking attention matches float64 brute force", "[cuda]") {
  for_each_kernel_form([] {
    uint64_t seed = 200;
    for (const auto& sh : kShapes)
      for (bool remainder : {false, true}) {
        check_sba<float>(sh, remainder, seed++);
        check_sba<bf16>(sh, remainder, seed++);
      }
    // 32 key blocks of normal inputs: the forward stops two or three blocks left of the diagonal
    // (a row's softplus sum passes 128 bits about 110 keys back), the backward starts there.
    for (const std::vector<int>& first : {check_sba<float>({1, 2000, 64}, true, seed++),
                                          check_sba<bf16>({1, 2000, 64}, false, seed++),
                                          check_sba<bf16>({1, 2000, 128}, true, seed++)}) {
      CHECK(first.front() == 0);
      CHECK(first.back() >= 31 - 4);
    }
    // Far-reaching sticks: every key block counts, so the backward's later-key sums start from each
    // row's whole softplus sum S_i over up to 2,000 keys; taking the blocks seen off S_i must lose
    // nothing. T = 700 has 11 query blocks: the Hopper backward's last block of two holds one.
    for (const std::vector<int>& first : {check_sba<float>({1, 2000, 64}, true, seed++, true),
                                          check_sba<bf16>({1, 2000, 64}, false, seed++, true),
                                          check_sba<bf16>({2, 1500, 128}, true, seed++, true),
                                          check_sba<bf16>({1, 700, 32}, true, seed++, true),
                                          check_sba<bf16>({2, 700, 64}, false, seed++, true)})
      CHECK(std::all_of(first.begin(), first.end(), [](int b) { return b == 0; }));
  });
}

TEST_CASE("CUDA PaTH and PaTH-FoX attention match float64 brute force", "[cuda]") {
  uint64_t seed = 300;
  for (const auto& sh : kShapes)
    for (bool gate : {false, true}) {
      check_path<float>(sh, gate, seed++);
      check_path<bf16>(sh, gate, seed++);
    }
}

// Three PaTH-FoX MQRAR runs (T = 768, head dim 128) ended in a non-finite gradient in their first
// layer's attention after gradient-norm spikes of 1e4–1e11 (results/mqrar-h200): the kernels must
// stay finite and match the float64 reference where a trained layer's inputs are extreme.
TEST_CASE("CUDA PaTH-FoX at the MQRAR head shape with sharp logits, strong forgetting and beta at the clip",
          "[cuda]") {
  // bf16 at sd-3 logits: 1.1–2.9 % relative error on the H200 at 24b6655 (fp32 within 1e-5), so 4 %
  const PathRegime extreme{3.0, -1.0, 3.0, true, 0, 4e-2};
  uint64_t seed = 500;
  for (int64_t span : {0, 3}) {
    check_path<float>({2, 768, 128}, true, seed++, span, extreme);
    check_path<bf16>({2, 768, 128}, true, seed++, span, extreme);
  }
  check_path<bf16>({2, 768, 128}, false, seed++, 0, extreme);  // the same without the gate: PaTH alone
  check_path<bf16>({16, 768, 128}, true, seed++, 0, extreme);   // 192 chunks, as a model batch spreads them
  // a head that forgets ~12 nats per token: cumulative gates near −9,000 by the end, where a float's
  // spacing is ~0.001 and the in-chunk differences still decide every weight
  check_path<float>({2, 768, 128}, true, seed++, 0, {3.0, -12.0, 3.0, true, 0, 4e-2});
  check_path<bf16>({2, 768, 128}, true, seed++, 0, {3.0, -12.0, 3.0, true, 0, 4e-2});
  // w from 8 directions, each about 96 times in a sequence
  check_path<float>({2, 768, 128}, true, seed++, 0, {3.0, -1.0, 3.0, true, 8, 4e-2});
  check_path<bf16>({2, 768, 128}, true, seed++, 0, {3.0, -1.0, 3.0, true, 8, 4e-2});
  check_path<bf16>({2, 768, 128}, false, seed++, 3, {3.0, -1.0, 3.0, true, 8, 4e-2});
}

// A trained PaTH-FoX MQRAR layer went non-finite on sequences whose chunks held one repeated token:
// 64 identical w and β = 1.925. X = (I + strict_lower(diag(β) W Wᵀ))⁻¹ diag(β) is then Toeplitz
// with alternating entries up to 3.7 whose bf16 roundings add up coherently in X W, so X rounded to
// bf16 made each chunk's P = I − Wᵀ X W a 2.5× expansion and the bf16 output wrong by 140 %
// (results/mqrar-nan-replays-h200); the kernels keep X as bf16 X_hi + X_lo. Measured on the H200
// (79dea87): o, lse, dq, dk, dv within the usual 1 %; dw and dβ up to 5.6 % (the backward still rounds
// A⁻ᵀ dX and the staged dM, dY to bf16 before products with X), so 8 % for those two. The kernels
// before the fix: o off by up to 390 %, dw and dβ by up to 2.9·10⁴ %.
TEST_CASE("CUDA PaTH and PaTH-FoX over runs of one repeated token match float64 brute force", "[cuda]") {
  uint64_t seed = 650;
  for (const double beta : {1.925, 1.99, 2.0 - 1e-3}) {
    INFO("beta " << beta);
    const PathRegime repeated{1.0, 2.0, 1.0, false, 1, kTolerance<bf16>, beta, 8e-2};
    check_path<bf16>({2, 768, 128}, true, seed++, 0, repeated);
    check_path<bf16>({2, 768, 128}, false, seed++, 3, repeated);
    check_path<bf16>({2, 300, 64}, false, seed++, 0, repeated);
    check_path<float>({2, 768, 128}, true, seed++, 0, repeated);
  }
}

TEST_CASE("CUDA PaTH and PaTH-FoX give the same result on every pass at the MQRAR model's layer shape", "[cuda]") {
  // B·H = 32 slices of the MQRAR head shape (T 768, D 128): 384 chunks, more than the resident
  // blocks; w from 8 directions and β at the clip, as a first layer over a small vocabulary.
  const PathRegime first_layer{1.0, 2.0, 1.0, true, 8};
  check_path_repeats<bf16>({32, 768, 128}, true, 600, 0, first_layer, 60);
  check_path_repeats<bf16>({32, 768, 128}, false, 601, 0, first_layer, 60);
  check_path_repeats<float>({32, 768, 128}, true, 602, 0, first_layer, 20);
}

// Host code only: runs wherever the CUDA code is built, GPU or not.
TEST_CASE("PaTH's CUDA forward alone lays out less workspace than a forward kept for its backward", "[path]") {
  for (int64_t d : {16, 64, 128}) {
    INFO("D " << d);
    cuda::PathAttentionCudaArgs<bf16> a;
    a.batch_heads = 4, a.length = 1000, a.head_dim = d, a.span_chunks = 4;  // 16 chunks, prefixes in 3 spans
    const size_t kept = cuda::path_attention_forward_workspace_bytes(a);
    a.for_backward = false;
    const size_t alone = cuda::path_attention_forward_workspace_bytes(a);
    // Three [BH, chunks, 64, 64] bf16 arrays (A⁻¹ as two parts, M; the backward forms X, strict_lower(W Kᵀ)
    // and tril(Q Wᵀ) again), the [BH, chunks, D, D] prefixes and the [BH, spans, Tp, D] queries Q⁽ʲ⁾;
    // where the build holds the Hopper kernels, at D = 64 and 128, the cross-span pass's [BH, Tp, D]
    // output and [BH, Tp] log-sum-exp in fp32 (256-byte alignment aside).
    const size_t chunk_blocks = size_t(4 * 16 * 64 * 64), prefixes = size_t(4 * 16 * d * d);
    const size_t span_queries = size_t(4 * 4 * 1024 * d);
    const size_t cross_span = cuda::hopper_kernels_built() && d >= 64 ? size_t(4 * 1024 * (d + 1)) : 0;
    const size_t left_out = sizeof(bf16) * (3 * chunk_blocks + prefixes + span_queries) + sizeof(float) * cross_span;
    CHECK(kept - alone >= left_out);
    CHECK(kept - alone < left_out + 7 * 256);
  }
}

TEST_CASE("PaTH's CUDA workspace sizes refuse a zero-length call with an error", "[path]") {
  cuda::PathAttentionCudaArgs<float> a;
  a.batch_heads = 2;
  a.length = 0;
  a.head_dim = 64;
  CHECK_THROWS_AS(cuda::path_attention_forward_workspace_bytes(a), Error);
  CHECK_THROWS_AS(cuda::path_attention_backward_workspace_bytes(a), Error);
  a.span_chunks = 3;
  CHECK_THROWS_AS(cuda::path_attention_forward_workspace_bytes(a), Error);
}

TEST_CASE("CUDA PaTH backward with more key chunks than resident blocks", "[cuda]") {
  check_path<float>({72, 330, 32}, true, 400);  // 432 chunks: each persistent block takes several
  check_path<bf16>({72, 330, 32}, false, 401);
}

TEST_CASE("CUDA PaTH backward with spans of several chunks", "[cuda]") {
  // 10 chunks in spans of 1 (every chunk pair crosses spans), 2, 3 (a short last span), 4 and 10
  // (one span: every pair inside it), so the span transforms, movers, query chain, span gradients
  // and in-span scan each carry part of the gradient; then other head dims and ragged ends.
  // The pairs across spans go through the key-major backward, whose Hopper form is checked too.
  for_each_kernel_form([] {
    uint64_t seed = 450;
    for (int64_t span : {1, 2, 3, 4, 10}) {
      check_path<float>({2, 600, 64}, span % 2 == 1, seed++, span);
      check_path<bf16>({2, 600, 64}, span % 2 == 0, seed++, span);
    }
    check_path<float>({1, 777, 128}, true, seed++, 3);  // 13 chunks: 5 spans
    check_path<bf16>({1, 777, 128}, true, seed++, 3);
    check_path<float>({3, 300, 16}, true, seed++, 2);
    check_path<bf16>({2, 450, 32}, false, seed++, 2);
    // At D = 128 the Hopper form takes key blocks in pairs within a span: spans of 1 (each pair's second
    // block lies in the next span), 2 (the last span's pair lacks its second block) and 4.
    for (int64_t span : {1, 2, 4}) check_path<bf16>({1, 777, 128}, span == 2, seed++, span);
  });
}

// A forward alone (evaluation) leaves out what only the backward reads. Where both scan every pair
// (every portable form, and Hopper's but for bf16 at D = 64 and 128 over several spans) what it
// writes is what the forward kept for its backward writes, by the same operations: o and the
// log-sum-exp bit-identical. Where the kept forward takes the pairs across spans in its Hopper pass
// of their own, the two agree up to rounding.
template <typename S>
void check_path_forward_alone(const Shape& sh, bool with_gate, uint64_t seed, int64_t span_chunks) {
  INFO(precision_name<S>() << " BH " << sh.bh << " T " << sh.T << " D " << sh.D << " gate " << with_gate << " span "
                           << span_chunks);
  PathCase<S> c(sh, with_gate, seed, span_chunks, PathRegime{});
  c.run();
  // Several spans: more chunks than a span holds (the automatic span is 4 chunks up to 19 chunks).
  const bool kept_split = std::is_same_v<S, bf16> && (sh.D == 64 || sh.D == 128) && cuda::hopper_kernels() &&
                          (sh.T + 63) / 64 > (span_chunks > 0 ? span_chunks : 4);
  INFO("the kept forward splits its pairs: " << kept_split);
  cuda::PathAttentionCudaArgs<S> alone = c.a;
  alone.for_backward = false;
  DeviceWorkspace fws(cuda::path_attention_forward_workspace_bytes(alone));
  DeviceArray<S> o(c.n);
  DeviceArray<float> lse(c.rows);
  cuda::path_attention_forward(alone, o.get(), lse.get(), fws.get(), nullptr);
  if (kept_split) {
    CHECK_CLOSE_WITHIN("o", o.download(), c.o.download(), kTolerance<S>);
    CHECK_CLOSE_WITHIN("lse", lse.download(), c.lse.download(), kTolerance<S>);
  } else {
    CHECK(o.download() == c.o.download());
    CHECK(lse.download() == c.lse.download());
  }
  CHECK_THROWS_WITH(cuda::path_attention_backward(alone, o.get(), lse.get(), fws.get(), c.ddo.get(), c.dq.get(),
                                                  c.dk.get(), c.dv.get(), c.dw.get(), c.db.get(),
                                                  with_gate ? c.dg.get() : nullptr, c.bws.get(), nullptr),
                    Catch::Contains("its forward ran alone"));
}

TEST_CASE("CUDA PaTH forward alone gives the forward's outputs and refuses a backward", "[cuda]") {
  for_each_kernel_form([] {
    uint64_t seed = 470;
    for (const Shape& sh : std::vector<Shape>{{2, 37, 16}, {2, 600, 32}, {3, 257, 64}, {1, 777, 128}})
      for (bool gate : {false, true}) {
        check_path_forward_alone<float>(sh, gate, seed++, 2);  // spans of 2 chunks: prefixes where T > 128
        check_path_forward_alone<bf16>(sh, gate, seed++, 0);   // 257: 2 spans of 4 chunks, 777: 4
      }
  });
}

// One small ragged case per kernel and precision; the sanitizer runs (memcheck, racecheck) use this.
// Head dims 32, 64 (PaTH's compact local a at bf16) and 128 (Hopper forms at bf16, as at 64).
TEST_CASE("CUDA attention kernels at a small size", "[cuda][sanitize]") {
  for (int64_t d : {32, 64, 128}) {
    const Shape sh{2, 100, d};
    check_softmax<float>(sh, true, 500), check_softmax<bf16>(sh, true, 501);
    check_rope<bf16>(sh, false, 502);
    check_sba<float>(sh, true, 503), check_sba<bf16>(sh, true, 504);
    check_path<float>(sh, true, 505), check_path<bf16>(sh, true, 506);
    check_path<float>({1, 330, d}, true, 507, 2), check_path<bf16>({1, 330, d}, false, 508, 2);  // 3 spans
    check_path<bf16>({1, 420, d}, true, 509, 3);  // spans of 3, 3, 1: query-chain pairs of one chunk, one past the end
  }
}

TEST_CASE("CUDA attention rejects unsupported shapes and small workspaces", "[cuda]") {
  cuda::SoftmaxAttentionCudaArgs<bf16> a{2, 10, 48, 1.f, nullptr, nullptr, nullptr, nullptr, 1.f};
  CHECK_THROWS_AS(cuda::softmax_attention_forward<bf16>(a, nullptr, nullptr, nullptr), Error);
  a.head_dim = 64;
  CHECK_THROWS_AS(cuda::softmax_attention_backward<bf16>(a, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                   cuda::Workspace{}, nullptr),
                  Error);
  cuda::PathAttentionCudaArgs<float> p{2, 0, 64, 1.f};  // T = 0
  CHECK_THROWS_AS(cuda::path_attention_forward<float>(p, nullptr, nullptr, cuda::Workspace{}, nullptr), Error);
  DeviceArray<float> x(2 * 10 * 64), rows(2 * 10);  // a valid shape with its inputs, but no forward workspace
  p.length = 10, p.q = p.k = p.v = p.w = x.get(), p.beta = rows.get();
  DeviceWorkspace bws(cuda::path_attention_backward_workspace_bytes(p));
  CHECK_THROWS_WITH(cuda::path_attention_backward<float>(p, x.get(), rows.get(), cuda::Workspace{}, x.get(), x.get(),
                                                         x.get(), x.get(), x.get(), rows.get(), nullptr, bws.get(),
                                                         nullptr),
                    Catch::Contains("the forward's workspace"));
  cuda::StickBreakingCudaArgs<float> s{2, 10, 64, 1.f};  // stick-breaking without room for its saved row sums
  CHECK_THROWS_WITH(cuda::stick_breaking_forward<float>(s, nullptr, cuda::Workspace{}, nullptr),
                    Catch::Contains("saved row sums"));
  CHECK_THROWS_WITH(cuda::stick_breaking_backward<float>(s, cuda::Workspace{}, nullptr, nullptr, nullptr, nullptr,
                                                         cuda::Workspace{}, nullptr),
                    Catch::Contains("saved row sums"));
}

}  // namespace pathbench
#endif  // PATHBENCH_WITH_CUDA
