// The `fox` attention op on the GPU: the fused causal softmax attention kernels with the gate bias.
#include "core/attention/softmax/cuda/softmax_gpu_op.h"

namespace pathbench::cuda {

namespace {
template <typename S>
using FoxGpuOp = SoftmaxGpuOp<S, true>;
}  // namespace

GpuOps fox_gpu_ops() { return make_gpu_ops<FoxGpuOp>(); }

}  // namespace pathbench::cuda
