// The `nope` attention op on the GPU: the fused causal softmax attention kernels.
#include "core/attention/softmax/cuda/softmax_gpu_op.h"

namespace pathbench::cuda {

namespace {
template <typename S>
using NopeGpuOp = SoftmaxGpuOp<S, false>;
}  // namespace

GpuOps nope_gpu_ops() { return make_gpu_ops<NopeGpuOp>(); }

}  // namespace pathbench::cuda
