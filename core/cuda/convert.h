// fp32 → bf16 conversion on the GPU (round to nearest even): the bf16 copies of parameters and of
// matrix-product operands in bf16 mode. Device pointers; queued on `stream`.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace pathbench::cuda {

// y[n] = bf16(x[n]).
void to_bf16(const float* x, __nv_bfloat16* y, int64_t n, cudaStream_t stream);

}  // namespace pathbench::cuda
