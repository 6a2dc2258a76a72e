// The GPU evaluation of `pathbench op` (attention_op_gpu.h): upload, the op's GPU forward and
// backward, download.
#include "experiments/attention_op_gpu.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/attention/gpu_head_dims.h"
#include "core/error.h"
#include "core/optim/training_backend.h"

#ifdef PATHBENCH_WITH_CUDA
#include "core/attention/cuda/gpu_op.h"
#include "core/cuda/buffer.h"
#endif

namespace pathbench {

#ifdef PATHBENCH_WITH_CUDA

namespace {

// A device copy of n host values, stored as S.
template <typename S, typename T>
cuda::DeviceBuffer<S> upload(const T* host, int64_t n) {
  cuda::DeviceBuffer<S> device(std::max<size_t>(1, size_t(n)), "an op input");
  cuda::copy_to_device_as(device.data(), host, size_t(n), nullptr);
  return device;
}

template <typename S, typename T>
void download(const cuda::DeviceBuffer<S>& device, T* host, int64_t n) {
  cuda::copy_to_host_as(host, device.data(), size_t(n), nullptr);
}

template <typename S, typename T>
void run(const cuda::GpuOp<S>& gpu, const OpSettings& settings, const OpTensors<T>& t) {
  const int64_t n = t.batch_heads * t.length * t.head_dim, rows = t.batch_heads * t.length;
  cuda::DeviceBuffer<S> q = upload<S>(t.q, n), k = upload<S>(t.k, n), v = upload<S>(t.v, n), d_o = upload<S>(t.d_o, n);
  cuda::DeviceBuffer<S> o(n, "an op output"), dq(n, "an op output"), dk(n, "an op output"), dv(n, "an op output");
  cuda::DeviceBuffer<S> w, dw;                  // [BH, T, D] where the op takes w
  cuda::DeviceBuffer<float> beta, dbeta, cum, d_cum;  // [BH, T]
  cuda::GpuOpTensors<S> g;
  g.batch_heads = t.batch_heads, g.length = t.length, g.head_dim = t.head_dim, g.scale = float(t.scale);
  g.q = q.data(), g.k = k.data(), g.v = v.data(), g.d_o = d_o.data();
  g.o = o.data(), g.dq = dq.data(), g.dk = dk.data(), g.dv = dv.data();
  if (t.w) {
    w = upload<S>(t.w, n), beta = upload<float>(t.beta, rows);
    dw.reserve(size_t(n)), dbeta.reserve(size_t(rows));
    g.w = w.data(), g.beta = beta.data(), g.dw = dw.data(), g.dbeta = dbeta.data();
  }
  if (t.cum_gate) {
    cum = upload<float>(t.cum_gate, rows);
    d_cum.reserve(size_t(rows));
    g.cum_gate = cum.data(), g.d_cum_gate = d_cum.data();
  }
  const size_t forward_bytes = gpu.forward_workspace_bytes(settings, g), backward_bytes = gpu.backward_workspace_bytes(settings, g);
  cuda::DeviceBuffer<char> forward_ws(std::max<size_t>(1, forward_bytes), "the op's forward workspace");
  cuda::DeviceBuffer<char> backward_ws(std::max<size_t>(1, backward_bytes), "the op's backward workspace");
  const cuda::Workspace f{forward_ws.data(), forward_bytes}, b{backward_ws.data(), backward_bytes};
  gpu.forward(settings, g, f, nullptr);
  gpu.backward(settings, g, f, b, nullptr);
  PATHBENCH_CUDA_CHECK(cudaDeviceSynchronize());
  download(o, t.o, n), download(dq, t.dq, n), download(dk, t.dk, n), download(dv, t.dv, n);
  if (t.w) download(dw, t.dw, n), download(dbeta, t.dbeta, rows);
  if (t.cum_gate) download(d_cum, t.d_cum_gate, rows);
}

}  // namespace

template <typename T>
void run_attention_op_on_gpu(const AttentionOpInfo& op, const OpSettings& settings, const OpTensors<T>& t,
                             Precision precision) {
  check_device_available("cuda");
  if (!gpu_head_dim_supported(t.head_dim))
    throw Error(fmt::format("op --device cuda: head dimension {}: the GPU kernels take {}", t.head_dim,
                            gpu_head_dims_text()));
  if (precision == Precision::tf32)
    throw Error("op --device cuda: --precision tf32 has no attention kernels of its own (use fp32 or bf16)");
  const bool bf16 = precision == Precision::bf16;
  if (bf16 ? !op.gpu_bf16 : !op.gpu_float)
    throw Error(fmt::format("op --device cuda: op '{}' has no GPU implementation", op.name));
  if (bf16)
    run(*op.gpu_bf16, settings, t);
  else
    run(*op.gpu_float, settings, t);
}

#else

template <typename T>
void run_attention_op_on_gpu(const AttentionOpInfo&, const OpSettings&, const OpTensors<T>&, Precision) {
  throw Error("op --device cuda: this build has no CUDA backend (configure with -DPATHBENCH_CUDA=ON)");
}

#endif

template void run_attention_op_on_gpu(const AttentionOpInfo&, const OpSettings&, const OpTensors<float>&, Precision);
template void run_attention_op_on_gpu(const AttentionOpInfo&, const OpSettings&, const OpTensors<double>&, Precision);

}  // namespace pathbench
