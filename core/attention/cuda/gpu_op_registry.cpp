// The GPU implementations of the registered attention ops (a declaration and a list entry each),
// attached by name.
#include "core/attention/cuda/gpu_op.h"

namespace pathbench {

namespace cuda {
// Defined in the ops' cuda/<name>_gpu_op.cpp (path_fox beside path, in path_gpu_op.cpp).
GpuOps nope_gpu_ops();
GpuOps rope_gpu_ops();
GpuOps fox_gpu_ops();
GpuOps sba_gpu_ops();
GpuOps path_gpu_ops();
GpuOps path_fox_gpu_ops();
}  // namespace cuda

void attach_gpu_ops(std::vector<AttentionOpInfo>& ops) {
  const std::pair<const char*, cuda::GpuOps> gpu[] = {
      {"nope", cuda::nope_gpu_ops()}, {"rope", cuda::rope_gpu_ops()}, {"fox", cuda::fox_gpu_ops()},
      {"sba", cuda::sba_gpu_ops()},   {"path", cuda::path_gpu_ops()}, {"path_fox", cuda::path_fox_gpu_ops()},
  };
  for (AttentionOpInfo& op : ops)
    for (const auto& [name, implementations] : gpu)
      if (op.name == name) {
        op.gpu_float = implementations.fp32_storage;
        op.gpu_bf16 = implementations.bf16_storage;
      }
}

}  // namespace pathbench
