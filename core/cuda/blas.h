// Matrix products through cuBLAS in the row-major convention of the CPU code, computed at the
// context's precision: fp32 (CUBLAS_COMPUTE_32F, no tf32), tf32 (CUBLAS_COMPUTE_32F_FAST_TF32) or
// bf16 (bf16 operands, fp32 accumulation and output).
#pragma once
#include <cstdint>

#include "core/cuda/context.h"

namespace pathbench::cuda {

// C[M, N] = alpha · op(A) · op(B) + beta · C, row-major, op(X) = Xᵀ when trans_x. A and B point to
// float (fp32, tf32) or bf16 (bf16 mode); C is float. lda, ldb, ldc are row strides in elements.
// Bad sizes or strides throw pathbench::Error naming `what` (the op) before cuBLAS sees the call.
void gemm(const Context& ctx, const char* what, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          float alpha, const void* a, int64_t lda, const void* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace pathbench::cuda
