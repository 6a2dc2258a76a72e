// PaTH attention backward, CUDA (algorithm in path_kernels.h): the pass that queues, on what the
// forward's prep and span kernels left (path_forward.cu, path_span.cu), the cross-span pairs
// (key_major_backward.cuh), the in-span scan (path_span_scan.cuh), the query chain and span
// gradients (path_span.cu) and the per-chunk kernels local a (path_local_a.cuh) and local b
// (path_local_b.cuh), each in its Hopper form where it has one (the *_hopper.cuh files; at D = 64
// local a and local b run as one Hopper kernel, path_local_ab_hopper.cuh) and hopper_kernels() holds.
#include "core/attention/cuda/online_softmax.cuh"
#include "core/attention/cuda/key_major_backward.cuh"
#include "core/attention/path/cuda/path_local_a.cuh"
#include "core/attention/path/cuda/path_local_ab_hopper.cuh"
#include "core/attention/path/cuda/path_local_b.cuh"
#include "core/attention/path/cuda/path_local_b_hopper.cuh"
#include "core/attention/path/cuda/path_span_scan.cuh"
#include "core/attention/path/cuda/path_span_scan_hopper.cuh"
#include "core/attention/path/cuda/path_workspace.cuh"
#include "core/cuda/hopper.h"
#include "core/cuda/side_stream.h"
#include "core/error.h"

#include <stdexcept>
#include <string>

namespace pathbench::cuda {

namespace {

using namespace tiles;

// Resident blocks of the in-span scan's Hopper form (hopper true) or its portable one.
template <typename S, int D>
int span_scan_resident_blocks(bool hopper) {
  if constexpr (span_scan::kScanHopperForm<S, D>) {
    if (hopper)
      return resident_blocks(span_scan::path_span_scan_hopper_kernel<D>, kThreads,
                             span_scan::SpanScanHopperLayout<D>::bytes, "path_span_scan_hopper_kernel");
  }
  return resident_blocks(span_scan::path_span_scan_kernel<S, D>, kThreads,
                         span_scan::SpanScanSmem<S, D>(nullptr).bytes, "path_span_scan_kernel");
}

// Blocks of the in-span scan that the workspace keeps key states for: the larger of the two forms'
// resident blocks (so that either form runs on it), at most one per item (none where every span is a
// single chunk).
template <typename S>
int span_scan_blocks(const PathAttentionCudaArgs<S>& a) {
  int blocks = 0;
  with_head_dim(a.head_dim, [&]<int D>() {
    blocks = span_scan_resident_blocks<S, D>(false);
    if (hopper_kernels_available()) blocks = std::max(blocks, span_scan_resident_blocks<S, D>(true));
  });
  const PathWorkspace<S> w(a);
  return int(std::min<int64_t>(span_scan::ScanItems::count(a.batch_heads, w.chunks, w.span_chunks), blocks));
}

// Queues the in-span scan: the Hopper form for bf16 at D = 64 where hopper_kernels() holds,
// as many blocks as stay resident (and the workspace has key states for); nothing when it has no
// items.
template <typename S>
void launch_span_scan(const PathAttentionCudaArgs<S>& a, const PathWorkspace<S>& w, const S* d_o, const float* lse,
                      cudaStream_t stream) {
  if (w.state_blocks == 0) return;
  with_head_dim(a.head_dim, [&]<int D>() {
    if constexpr (span_scan::kScanHopperForm<S, D>) {
      if (choose_hopper_form()) {
        const unsigned blocks = unsigned(std::min(w.state_blocks, span_scan_resident_blocks<S, D>(true)));
        return launch_kernel(span_scan::path_span_scan_hopper_kernel<D>, dim3(blocks),
                             span_scan::SpanScanHopperLayout<D>::bytes, stream, "path_span_scan_hopper_kernel", a,
                             w, d_o, lse);
      }
    }
    const unsigned blocks = unsigned(std::min(w.state_blocks, span_scan_resident_blocks<S, D>(false)));
    launch_kernel(span_scan::path_span_scan_kernel<S, D>, dim3(blocks), span_scan::SpanScanSmem<S, D>(nullptr).bytes,
                  stream, "path_span_scan_kernel", a, w, d_o, lse);
  });
}

// Queues the per-chunk kernels, one block a chunk: for bf16 at D = 64 where hopper_kernels() holds,
// local a and local b in one Hopper kernel; else local a's portable kernel, then local b (its Hopper
// form for bf16 at D = 128 where hopper_kernels() holds).
template <typename S>
void launch_local(const PathAttentionCudaArgs<S>& a, const PathWorkspace<S>& w, const S* d_o, const float* lse, S* dq,
                  S* dk, S* dv, S* dw, float* dbeta, float* d_gate, cudaStream_t stream) {
  const dim3 chunks(unsigned(w.chunks), unsigned(a.batch_heads));
  with_head_dim(a.head_dim, [&]<int D>() {
    if constexpr (local_ab::kLocalABHopperForm<S, D>) {
      if (choose_hopper_form())
        return launch_kernel(local_ab::path_local_ab_hopper_kernel<D>, chunks, local_ab::LocalABHopperLayout::bytes,
                             stream, "path_local_ab_hopper_kernel", a, w, d_o, lse, dq, dv, d_gate, dk, dw, dbeta);
    }
    launch_kernel(local_a::path_local_a_kernel<S, D>, chunks, local_a::LocalASmem<S, D>(nullptr).bytes, stream,
                  "path_local_a_kernel", a, w, d_o, lse, dq, dv, d_gate);
    if constexpr (wgmma::kHasHopperForm<S, D>) {
      if (choose_hopper_form())
        return launch_kernel(local_b::path_local_b_hopper_kernel<D>, chunks, local_b::LocalBHopperLayout<D>::bytes,
                             stream, "path_local_b_hopper_kernel", a, w, dk, dw, dbeta);
    }
    launch_kernel(local_b::path_local_b_kernel<S, D>, chunks, local_b::LocalBSmem<S, D>(nullptr).bytes, stream,
                  "path_local_b_kernel", a, w, dk, dw, dbeta);
  });
}

// Zeroes the rows of dQ⁽ʲ⁾ that the key-major pass adds to: in slot j of every slice those of the
// query chunks after span j (the rows the forward filled in Q⁽ʲ⁾), one strided memset
// a slot.
template <typename S>
void zero_span_query_gradients(const PathAttentionCudaArgs<S>& a, const PathWorkspace<S>& w, cudaStream_t stream) {
  const size_t row_bytes = size_t(a.head_dim) * sizeof(S), slice_bytes = size_t(w.spans * w.padded) * row_bytes;
  for (int64_t j = 0; j + 1 < w.spans; ++j) {
    const int64_t first = (j + 1) * w.span_chunks * kChunk;  // the first query row after span j
    check_cuda(cudaMemset2DAsync(w.dqspan + (j * w.padded + first) * a.head_dim, slice_bytes, 0,
                                 size_t(w.padded - first) * row_bytes, size_t(a.batch_heads), stream),
               "path_attention_backward (cuda): zero dQ of the span queries");
  }
}

}  // namespace

template <typename S>
size_t path_attention_backward_workspace_bytes(const PathAttentionCudaArgs<S>& a) {
  check_attention_shape(a.batch_heads, a.length, a.head_dim, "path_attention_backward (cuda)");
  return PathWorkspace<S>(a).carve_backward(nullptr, a, span_scan_blocks(a));
}

template <typename S>
void path_attention_backward(const PathAttentionCudaArgs<S>& a, const S* o, const float* lse, Workspace forward_ws,
                             const S* d_o, S* dq, S* dk, S* dv, S* dw, float* dbeta, float* d_cum_log_gate,
                             Workspace ws, cudaStream_t stream) {
  const char* fn = "path_attention_backward (cuda)";
  check_path_args(a, fn);
  if (!a.for_backward) throw std::logic_error(std::string(fn) + ": its forward ran alone (for_backward false)");
  PathWorkspace<S> w(a);
  // Carving reads nothing, so the layouts are checked against the workspaces after they are laid out.
  check_workspace(forward_ws, w.carve_forward(forward_ws.data, a), std::string(fn) + " (the forward's workspace)");
  check_workspace(ws, w.carve_backward(ws.data, a, span_scan_blocks(a)), fn);
  const int64_t d = a.head_dim, rows = a.batch_heads * w.padded;
  // The accumulators are zeroed on a side stream beside the first kernels: dQ⁽ʲ⁾ (which the
  // key-major pass adds to) beside the row dot, the rest (which the later passes add to) beside the
  // key-major pass. Without a side stream (a capture that found none made) all of it goes first.
  SideStream* side = side_stream(stream);
  const cudaStream_t zeroing = side ? side->stream() : stream;
  if (side) side->fork(stream);
  zero_span_query_gradients(a, w, zeroing);
  if (side) side->mark(0);
  check_cuda(cudaMemsetAsync(w.dqh, 0, rows * d * sizeof(float), zeroing), fn);
  check_cuda(cudaMemsetAsync(w.dpm, 0, a.batch_heads * w.chunks * d * d * sizeof(float), zeroing), fn);
  check_cuda(cudaMemsetAsync(w.dfspan, 0, a.batch_heads * w.spans * d * d * sizeof(float), zeroing), fn);
  if (side) side->mark(1);
  detail::row_dot(d_o, o, w.delta, a.batch_heads * a.length, d, stream);
  if (side) side->wait(stream, 0);

  KeyMajorBackwardArgs<S, float, S> km;  // pairs across spans: Q⁽ʲ⁾ against K̄, dQ⁽ʲ⁾ in S
  km.batch_heads = a.batch_heads, km.length = a.length, km.scale = a.scale, km.gate_scale = a.gate_scale;
  km.span_blocks = int(w.span_chunks);
  km.k = w.kbar, km.k_slice = w.padded;
  km.q = w.qspan, km.dq = w.dqspan, km.q_slice = w.spans * w.padded, km.q_span = w.padded;
  km.v = a.v, km.d_o = d_o, km.lse = lse, km.delta = w.delta, km.gate = a.cum_log_gate;
  km.dk = w.dkh, km.dv = w.dvc, km.d_gate = a.cum_log_gate ? w.dcc : nullptr, km.out_slice = w.padded;
  key_major_backward(km, d, stream);
  if (side) side->wait(stream, 1);

  float* d_gate = a.cum_log_gate ? d_cum_log_gate : nullptr;
  launch_span_scan(a, w, d_o, lse, stream);
  launch_path_query_chain(a, w, stream);
  launch_path_span_gradients(a, w, stream);
  launch_local(a, w, d_o, lse, dq, dk, dv, dw, dbeta, d_gate, stream);
}

#define PATHBENCH_INSTANTIATE(S)                                                                              \
  template size_t path_attention_backward_workspace_bytes<S>(const PathAttentionCudaArgs<S>&);               \
  template void path_attention_backward<S>(const PathAttentionCudaArgs<S>&, const S*, const float*, Workspace,   \
                                           const S*, S*, S*, S*, S*, float*, float*, Workspace, cudaStream_t);
PATHBENCH_INSTANTIATE(float)
PATHBENCH_INSTANTIATE(bf16)
#undef PATHBENCH_INSTANTIATE

}  // namespace pathbench::cuda
