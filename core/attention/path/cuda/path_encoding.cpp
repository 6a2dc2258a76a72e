// PaTH and PaTH-FoX on the GPU: the w/β projection (in bf16 mode one kernel each way,
// projection_fused.h, where it takes the shape; else staged: low-rank products through
// cuda::linear_*, the convolution/SiLU/normalization and β kernels of projection_kernels.cu), the
// fused blocked-UT PaTH kernels (path_kernels.h) and, for path_fox, the GPU forget gate
// (forget_gate.h).
#include <memory>
#include <type_traits>

#include "core/attention/fox/cuda/forget_gate.h"
#include "core/attention/path/cuda/path_kernels.h"
#include "core/attention/path/cuda/projection_fused.h"
#include "core/attention/path/cuda/projection_kernels.h"
#include "core/ops/cuda/linear.h"
#include "core/ops/cuda/ops.h"

namespace pathbench::cuda {

namespace {

constexpr int64_t kConvWidth = 3;

// Twin of path_projection.h's PathProjection: w [B, H, T, D] (storage S) and β [B, H, T] from x.
// bf16_storage: w is stored in bf16 (the fused kernels write only that).
class PathProjection {
 public:
  PathProjection(const EncodingSetup& setup, bool bf16_storage)
      : ctx_(*setup.context),
        bf16_storage_(bf16_storage),
        grad_layout_(projection_grad_layout(*setup.layout, setup.prefix)),
        down_(setup.layout->find(setup.prefix + "path_w_down")),
        up_(setup.layout->find(setup.prefix + "path_w_up")),
        conv_(setup.layout->find(setup.prefix + "path_w_conv")),
        beta_weight_(setup.layout->find(setup.prefix + "path_beta_weight")),
        beta_bias_(setup.layout->find(setup.prefix + "path_beta_bias")),
        rank_(setup.options.at("rank").get<int64_t>()),
        beta_clip_eps_(setup.options.at("beta_clip_eps").get<double>()) {}

  // A forward alone (Pass::forward) keeps nothing for a backward: no z or norms. The matrices that
  // only products read (low, dy, dlow) are bf16 alone in bf16 mode, written so by their producers;
  // dpre gets a bf16 copy beside the fp32 values its bias gradient sums.
  bool reserve(const AttentionDims& d, Pass pass) {
    const Precision precision = ctx_.precision();
    fused_ = bf16_storage_ && precision == Precision::bf16 &&
             fused_projection_supported(d.width, rank_, d.heads, d.head_dim, grad_layout_);
    if (fused_) {
      if (pass == Pass::forward) return false;
      blocks_ = fused_projection_backward_blocks(fused_args(nullptr, {}, d), grad_layout_);
      return partial_.reserve(size_t(blocks_) * size_t(grad_layout_.span));
    }
    const size_t n = size_t(d.batch * d.length), hd = size_t(d.heads * d.head_dim), h = size_t(d.heads);
    bool moved = low_.reserve(n * rank_, precision) | y_.reserve(n * hd) | beta_pre_.reserve(n * h);
    if (pass == Pass::forward) return moved;
    moved |= z_.reserve(n * hd) | norm_.reserve(n * h);
    moved |= dlow_.reserve(n * rank_, precision) | dz_.reserve(n * hd) | dy_.reserve(n * hd, precision);
    moved |= dpre_.reserve(n * h) | (precision == Precision::bf16 && dpre16_.reserve(n * h));
    return moved | scratch_.reserve(size_t(kColumnScratchPerColumn) * std::max(kConvWidth * hd, h));
  }

  // for_backward: keep z and the norms for a backward (the pass reserved was Pass::training).
  template <typename S>
  void forward(CudaParameters& params, MatrixInput x, const AttentionDims& d, S* w, float* beta, bool for_backward) {
    if constexpr (std::is_same_v<S, bf16>)
      if (fused_) return fused_projection_forward(fused_args(&params, x, d), w, beta, ctx_.stream());
    const int64_t n = d.batch * d.length, hd = d.heads * d.head_dim;
    cudaStream_t s = ctx_.stream();
    linear_forward(ctx_, x, params.weight(down_), low_, n, d.width, rank_);
    linear_forward(ctx_, low_.input(), params.weight(up_), y_.data(), n, rank_, hd);
    path_w_forward(y_.data(), params.value(conv_), for_backward ? z_.data() : nullptr,
                   for_backward ? norm_.data() : nullptr, w, d.batch, d.length, d.heads, d.head_dim, s);
    linear_forward(ctx_, x, params.weight(beta_weight_), beta_pre_.data(), n, d.width, d.heads);
    path_beta_forward(beta_pre_.data(), params.value(beta_bias_), beta, d.batch, d.length, d.heads, beta_clip_eps_, s);
  }

  // dw [B, H, T, D], dbeta [B, H, T]: adds the parameter gradients and dx [B, T, C].
  template <typename S>
  void backward(CudaParameters& params, MatrixInput x, const AttentionDims& d, const S* dw, const float* dbeta,
                float* dx) {
    if constexpr (std::is_same_v<S, bf16>)
      if (fused_)
        return fused_projection_backward(fused_args(&params, x, d), dw, dbeta, dx, grad_layout_, params.grad(down_),
                                         partial_.data(), blocks_, ctx_.stream());
    const int64_t n = d.batch * d.length, hd = d.heads * d.head_dim;
    cudaStream_t s = ctx_.stream();
    path_beta_backward(beta_pre_.data(), dbeta, dpre_.data(), dpre16_.data(), params.grad(beta_bias_),
                       scratch_.data(), d.batch, d.length, d.heads, beta_clip_eps_, s);
    linear_backward(ctx_, x, params.weight(beta_weight_), {dpre_.data(), dpre16_.data()}, dx, n, d.width, d.heads,
                    true);
    path_w_backward(z_.data(), norm_.data(), dw, dz_.data(), d.batch, d.length, d.heads, d.head_dim, s);
    path_conv_backward(y_.data(), params.value(conv_), dz_.data(), dy_.f32(), dy_.b16(), params.grad(conv_),
                       scratch_.data(), d.batch, d.length, hd, s);
    linear_backward(ctx_, low_.input(), params.weight(up_), dy_.input(), dlow_, n, rank_, hd);
    linear_backward(ctx_, x, params.weight(down_), dlow_.input(), dx, n, d.width, rank_, true);
  }

 private:
  // The fused kernels' arguments (params null: the dimensions alone).
  FusedProjectionArgs fused_args(CudaParameters* params, MatrixInput x, const AttentionDims& d) {
    FusedProjectionArgs a;
    a.x = x.f32, a.x16 = x.b16;
    if (params) {
      a.w_down = params->weight(down_).value_bf16, a.w_up = params->weight(up_).value_bf16;
      a.beta_weight = params->weight(beta_weight_).value_bf16;
      a.conv = params->value(conv_), a.beta_bias = params->value(beta_bias_);
    }
    a.batch = d.batch, a.length = d.length, a.width = d.width, a.heads = d.heads, a.head_dim = d.head_dim;
    a.rank = rank_, a.beta_clip_eps = beta_clip_eps_;
    return a;
  }

  Context& ctx_;
  bool bf16_storage_;
  ProjectionGradLayout grad_layout_;
  CudaParameters::Id down_, up_, conv_, beta_weight_, beta_bias_;  // [R, C], [H·D, R], [H·D, 3], [H, C], [H]
  int64_t rank_;
  double beta_clip_eps_;
  bool fused_ = false;  // of the last reserve: the fused kernels take this shape in bf16 mode
  int blocks_ = 0;      // the fused backward's blocks
  DeviceBuffer<float> partial_{"PaTH gradient sums"};  // [blocks, span] the fused backward's per-block sums
  ActivationMatrix low_{"PaTH projections"}, dlow_{"PaTH gradients"};                          // [N, R]
  DeviceBuffer<float> y_{"PaTH projections"}, z_{"PaTH projections"}, dz_{"PaTH gradients"};  // [N, H·D]
  ActivationMatrix dy_{"PaTH gradients"};                                                       // [N, H·D]
  DeviceBuffer<float> norm_{"PaTH norms"}, beta_pre_{"PaTH β"}, dpre_{"PaTH β gradients"};    // [N, H]
  DeviceBuffer<bf16> dpre16_{"PaTH β gradients"};  // [N, H] bf16 mode only
  DeviceBuffer<float> scratch_{"PaTH column sums"};
};

template <typename S>
class PathEncoding : public PositionEncoding<S> {
 public:
  PathEncoding(const EncodingSetup& setup, bool with_gate)
      : ctx_(*setup.context), projection_(setup, std::is_same_v<S, bf16>) {
    if (with_gate) gate_ = std::make_unique<ForgetGate>(setup);
  }

  bool reserve(const AttentionDims& d, Pass pass) override {
    dims_ = d;
    pass_ = pass;
    const size_t nt = size_t(d.batch * d.heads * d.length);
    bool moved = projection_.reserve(d, pass) | lse_.reserve(nt) | beta_.reserve(nt) | w_.reserve(nt * d.head_dim);
    const PathAttentionCudaArgs<S> a = args(nullptr, nullptr, nullptr);
    moved |= forward_ws_.reserve(std::max<size_t>(1, path_attention_forward_workspace_bytes(a)));
    if (pass == Pass::training) {
      moved |= dbeta_.reserve(nt) | dw_.reserve(nt * d.head_dim);
      moved |= backward_ws_.reserve(std::max<size_t>(1, path_attention_backward_workspace_bytes(a)));
    }
    if (gate_) moved |= gate_->reserve(d, pass);
    return moved;
  }

  void forward(CudaParameters& params, const AttentionInputs<S>& in, S* o) override {
    projection_.forward(params, {in.x, in.x16}, in.dims, w_.data(), beta_.data(), pass_ == Pass::training);
    cum_ = gate_ ? gate_->forward(params, {in.x, in.x16}, in.dims) : nullptr;
    path_attention_forward(args(in.q, in.k, in.v), o, lse_.data(), workspace(forward_ws_), ctx_.stream());
  }

  void backward(CudaParameters& params, const AttentionInputs<S>& in, const S* o, const S* d_o, S* dq, S* dk, S* dv,
                float* dx) override {
    path_attention_backward(args(in.q, in.k, in.v), o, lse_.data(), workspace(forward_ws_), d_o, dq, dk, dv,
                            dw_.data(), dbeta_.data(), gate_ ? gate_->d_cum() : nullptr, workspace(backward_ws_),
                            ctx_.stream());
    projection_.backward(params, {in.x, in.x16}, in.dims, dw_.data(), dbeta_.data(), dx);
    if (gate_) gate_->backward(params, {in.x, in.x16}, in.dims, dx);
  }

  OpCallTensors<S> op_call() const override {
    OpCallTensors<S> call(gate_ ? "path_fox" : "path");
    call.w = w_.data(), call.dw = dw_.data(), call.beta = beta_.data(), call.dbeta = dbeta_.data();
    if (gate_) {
      call.settings.gate_scale = gate_->gate_scale();
      call.cum_gate = cum_, call.d_cum_gate = gate_->d_cum();
    }
    return call;
  }

 private:
  static Workspace workspace(DeviceBuffer<char>& b) { return Workspace{b.data(), b.size()}; }

  PathAttentionCudaArgs<S> args(const S* q, const S* k, const S* v) const {
    auto a = kernel_args<PathAttentionCudaArgs<S>>(dims_, q, k, v);
    a.w = w_.data();
    a.beta = beta_.data();
    a.cum_log_gate = cum_;
    a.gate_scale = gate_ ? gate_->gate_scale() : 1.0f;
    a.for_backward = pass_ == Pass::training;
    return a;
  }

  const Context& ctx_;
  AttentionDims dims_;
  Pass pass_ = Pass::training;  // of the last reserve: a forward alone keeps nothing for a backward
  PathProjection projection_;
  std::unique_ptr<ForgetGate> gate_;  // null for plain PaTH
  const float* cum_ = nullptr;        // [B, H, T] the gate's output of the last forward
  DeviceBuffer<S> w_{"PaTH w"}, dw_{"PaTH w gradients"};                                  // [B, H, T, D]
  DeviceBuffer<float> beta_{"PaTH β"}, dbeta_{"PaTH β gradients"}, lse_{"PaTH log-sum-exp"};  // [B, H, T]
  // the forward's workspace holds what the backward reads; the backward has its own besides
  DeviceBuffer<char> forward_ws_{"PaTH forward workspace"}, backward_ws_{"PaTH backward workspace"};
};

template <typename S>
class PlainPathEncoding : public PathEncoding<S> {
 public:
  explicit PlainPathEncoding(const EncodingSetup& setup) : PathEncoding<S>(setup, false) {}
};

template <typename S>
class PathFoxEncoding : public PathEncoding<S> {
 public:
  explicit PathFoxEncoding(const EncodingSetup& setup) : PathEncoding<S>(setup, true) {}
};

}  // namespace

EncodingFactories path_cuda_encoding() { return make_encoding_factories<PlainPathEncoding>(); }
EncodingFactories path_fox_cuda_encoding() { return make_encoding_factories<PathFoxEncoding>(); }

}  // namespace pathbench::cuda
