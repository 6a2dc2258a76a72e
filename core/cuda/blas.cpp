// cuBLAS products: row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, so the operands
// swap places and each keeps its own transpose flag.
#include "core/cuda/blas.h"

#include <stdexcept>
#include <string>

#include "core/cuda/gemm_shape.h"

namespace pathbench::cuda {

namespace {

struct Types {
  cudaDataType_t operand;
  cublasComputeType_t compute;
};

Types types_for(Precision p) {
  switch (p) {
    case Precision::tf32: return {CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
    case Precision::bf16: return {CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    case Precision::fp32: break;
  }
  return {CUDA_R_32F, CUBLAS_COMPUTE_32F};
}

cublasOperation_t op(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

// The product with C of type c_type (CUDA_R_32F or CUDA_R_16BF).
void gemm_into(const Context& ctx, const char* what, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
               float alpha, const void* a, int64_t lda, const void* b, int64_t ldb, float beta, void* c,
               cudaDataType_t c_type, int64_t ldc) {
  check_gemm_shape(GemmShape{trans_a, trans_b, m, n, k, lda, ldb, ldc}, what);
  const Types t = types_for(ctx.precision());
  PATHBENCH_CUBLAS_CHECK(cublasGemmEx(ctx.blas(), op(trans_b), op(trans_a), int(n), int(m), int(k), &alpha, b,
                                      t.operand, int(ldb), a, t.operand, int(lda), &beta, c, c_type, int(ldc),
                                      t.compute, CUBLAS_GEMM_DEFAULT));
}

}  // namespace

void gemm(const Context& ctx, const char* what, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          float alpha, const void* a, int64_t lda, const void* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  gemm_into(ctx, what, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, CUDA_R_32F, ldc);
}

void gemm(const Context& ctx, const char* what, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          float alpha, const void* a, int64_t lda, const void* b, int64_t ldb, float beta, bf16* c, int64_t ldc) {
  if (ctx.precision() != Precision::bf16)
    throw std::logic_error(std::string(what) + ": a bf16 product output outside bf16 mode");
  gemm_into(ctx, what, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, CUDA_R_16BF, ldc);
}

}  // namespace pathbench::cuda
