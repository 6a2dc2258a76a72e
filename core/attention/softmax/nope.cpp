// The `nope` encoding: causal softmax attention with no position information.
#include <vector>

#include "core/attention/kernel_args.h"
#include "core/attention/registry_entry.h"
#include "core/attention/softmax/softmax_attention.h"

namespace pathbench {

namespace {

template <typename T>
class NopeEncoding : public PositionEncoding<T> {
 public:
  explicit NopeEncoding(const EncodingSetup<T>&) {}

  void forward(ParameterSet<T>&, const AttentionInputs<T>& in, T* o) override {
    lse_.resize(in.dims.batch * in.dims.heads * in.dims.length);
    softmax_attention_forward(args(in), o, lse_.data());
  }

  void backward(ParameterSet<T>&, const AttentionInputs<T>& in, const T* o, const T* d_o, T* dq, T* dk, T* dv,
                T*) override {
    softmax_attention_backward(args(in), o, lse_.data(), d_o, dq, dk, dv, static_cast<T*>(nullptr));
  }

  OpCallView<T> op_call() const override { return OpCallView<T>("nope"); }

 private:
  static SoftmaxAttentionArgs<T> args(const AttentionInputs<T>& in) {
    return kernel_args<SoftmaxAttentionArgs<T>>(in.dims, in.q, in.k, in.v);
  }

  std::vector<T> lse_;  // [BH, T]
};

}  // namespace

EncodingInfo nope_encoding_info() {
  return make_encoding_info<NopeEncoding>("nope", "no position encoding, causal softmax attention", {},
                                          [](int64_t) { return std::string(); });
}

}  // namespace pathbench
