// Matrix products through cuBLAS in the row-major convention of the CPU code, computed at the
// context's precision: fp32 (CUBLAS_COMPUTE_32F, no tf32), tf32 (CUBLAS_COMPUTE_32F_FAST_TF32) or
// bf16 (bf16 operands, fp32 accumulation, fp32 output or the fp32 result rounded to bf16 once).
#pragma once
#include <cstdint>

#include "core/cuda/context.h"

namespace pathbench::cuda {

// C[M, N] = alpha · op(A) · op(B) + beta · C, row-major, op(X) = Xᵀ when trans_x. A and B point to
// float (fp32, tf32) or bf16 (bf16 mode); C is float, or bf16 in bf16 mode only (the fp32 sums
// rounded to bf16 in the product's epilogue). lda, ldb, ldc are row strides in elements. Bad sizes or
// strides throw pathbench::Error naming `what` (the op) before cuBLAS sees the call; a bf16 C outside
// bf16 mode throws std::logic_error (with beta ≠ 0 a bf16 C is read as bf16, the sum rounded once).
void gemm(const Context& ctx, const char* what, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          float alpha, const void* a, int64_t lda, const void* b, int64_t ldb, float beta, float* c, int64_t ldc);
void gemm(const Context& ctx, const char* what, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          float alpha, const void* a, int64_t lda, const void* b, int64_t ldb, float beta, bf16* c, int64_t ldc);

}  // namespace pathbench::cuda
