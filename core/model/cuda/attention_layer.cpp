// GPU multi-head attention block: projections, head split/merge, the position encoding.
#include "core/model/cuda/attention_layer.h"

#include <stdexcept>
#include <type_traits>

#include "core/attention/cuda/gpu_encoding.h"
#include "core/model/cuda/op_call_record.h"
#include "core/ops/cuda/head_layout.h"
#include "core/ops/cuda/linear.h"

namespace pathbench::cuda {

namespace {

template <typename S>
MatrixInput as_input(const S* p) {
  if constexpr (std::is_same_v<S, float>)
    return {p, nullptr};
  else
    return {nullptr, p};
}

template <typename S>
class AttentionLayer : public AttentionBlock {
 public:
  AttentionLayer(Context& ctx, CudaParameters& params, const std::string& prefix, const ModelConfig& config)
      : ctx_(ctx), params_(params) {
    dims_.width = config.d_model;
    dims_.heads = config.n_heads;
    dims_.head_dim = config.head_dim();
    const ParameterSet<float>& layout = params.layout();
    wq_ = layout.find(prefix + "wq");
    wo_ = layout.find(prefix + "wo");
    const size_t block = size_t(dims_.heads * dims_.head_dim * dims_.width);
    if (layout.entry(layout.find(prefix + "wk")).offset != layout.entry(wq_).offset + block ||
        layout.entry(layout.find(prefix + "wv")).offset != layout.entry(wq_).offset + 2 * block)
      throw std::logic_error("GPU attention layer: " + prefix + "wq, wk, wv are not adjacent in the parameter buffer");
    EncodingSetup setup{config.encoding_options, dims_, prefix, &layout, &ctx};
    encoding_ = make_cuda_encoding<S>(config.encoding, config.encoding_options, setup, "model.encoding_options");
  }

  bool reserve(int64_t batch, int64_t length, Pass pass) override {
    dims_.batch = batch;
    dims_.length = length;
    const size_t size = size_t(batch * length * dims_.heads * dims_.head_dim);
    bool moved = qkv_.reserve(3 * size) | heads_.reserve(3 * size) | o_.reserve(size) | flat_.reserve(size);
    if (pass == Pass::training)
      moved |= d_flat_.reserve(size) | d_qkv_.reserve(3 * size) | d_heads_.reserve(3 * size) | do_.reserve(size);
    moved |= encoding_->reserve(dims_, pass);
    return moved;
  }

  void forward(MatrixInput x, float* y, int64_t batch, int64_t length) override {
    if (!x.f32) throw std::logic_error("GPU attention layer: the fp32 input is required");
    dims_.batch = batch;
    dims_.length = length;
    x_ = x;
    const int64_t n = batch * length, c = dims_.width, h = dims_.heads, d = dims_.head_dim, hd = h * d;
    cudaStream_t s = ctx_.stream();
    // In bf16 mode the product writes q, k, v in bf16: the head split, their only reader, needs no fp32 copy.
    linear_forward(ctx_, x, params_.weight(wq_), qkv_.data(), n, c, 3 * hd);
    split_heads(qkv_.data(), 3 * hd, heads_.data(), batch, length, h, d, s, 3);
    encoding_->forward(params_, inputs(), o_.data());
    merge_heads(o_.data(), flat_.data(), hd, batch, length, h, d, s);
    linear_forward(ctx_, as_input<S>(flat_.data()), params_.weight(wo_), y, n, hd, c, true);
  }

  void backward(MatrixInput dy, float* dx) override {
    const int64_t batch = dims_.batch, length = dims_.length, n = batch * length, c = dims_.width, h = dims_.heads,
                  d = dims_.head_dim, hd = h * d;
    cudaStream_t s = ctx_.stream();
    linear_backward(ctx_, as_input<S>(flat_.data()), params_.weight(wo_), dy, d_flat_.data(), n, hd, c);
    split_heads(d_flat_.data(), hd, do_.data(), batch, length, h, d, s);
    PATHBENCH_CUDA_CHECK(cudaMemsetAsync(dx, 0, size_t(n * c) * sizeof(float), s));
    S* dq = d_heads_.data();
    encoding_->backward(params_, inputs(), o_.data(), do_.data(), dq, dq + heads_size(), dq + 2 * heads_size(), dx);
    merge_heads(dq, d_qkv_.data(), 3 * hd, batch, length, h, d, s, 3);
    linear_backward(ctx_, x_, params_.weight(wq_), as_input<S>(d_qkv_.data()), dx, n, c, 3 * hd, true);
  }

  RecordedOpCall record_op_call() const override {
    const S *q = heads_.data(), *dq = d_heads_.data();
    const LayerCallTensors<S> layer{q, q + heads_size(), q + 2 * heads_size(), o_.data(),
                                    do_.data(), dq, dq + heads_size(), dq + 2 * heads_size()};
    return cuda::record_op_call(ctx_, dims_, layer, encoding_->op_call());
  }

 private:
  // Elements of one [B, H, T, D] tensor at the current shape.
  int64_t heads_size() const { return dims_.batch * dims_.length * dims_.heads * dims_.head_dim; }
  AttentionInputs<S> inputs() const {
    const S* q = heads_.data();
    return {dims_, x_.f32, q, q + heads_size(), q + 2 * heads_size(), x_.b16};
  }

  Context& ctx_;
  CudaParameters& params_;
  AttentionDims dims_;
  CudaParameters::Id wq_, wo_;  // wq heads the [3·H·D, C] block wq | wk | wv; wo: [C, H·D]
  std::unique_ptr<PositionEncoding<S>> encoding_;
  MatrixInput x_;                                                      // [B, T, C]
  DeviceBuffer<S> qkv_{"attention projections"};                       // [B, T, 3·H·D]: q | k | v of each row
  DeviceBuffer<S> heads_{"queries, keys, values"};                     // [3, B, H, T, D]: q | k | v
  DeviceBuffer<S> o_{"attention output"};                              // [B, H, T, D]
  DeviceBuffer<S> flat_{"attention output rows"};                      // [B, T, H·D]
  DeviceBuffer<float> d_flat_{"attention output gradient"};            // [B, T, H·D]
  DeviceBuffer<S> do_{"attention gradients"};                          // [B, H, T, D]
  DeviceBuffer<S> d_heads_{"attention gradients"};                     // [3, B, H, T, D]: dq | dk | dv
  DeviceBuffer<S> d_qkv_{"projection gradients"};                      // [B, T, 3·H·D]
};

}  // namespace

std::unique_ptr<AttentionBlock> make_attention_layer(Context& ctx, CudaParameters& params, const std::string& prefix,
                                                     const ModelConfig& config) {
  if (ctx.precision() == Precision::bf16) return std::make_unique<AttentionLayer<bf16>>(ctx, params, prefix, config);
  return std::make_unique<AttentionLayer<float>>(ctx, params, prefix, config);
}

}  // namespace pathbench::cuda
