// Checks of a row-major matrix product's sizes and row strides before it reaches cuBLAS, so a bad
// call fails with one pathbench::Error naming the op and shapes (cuBLAS would also print its own
// log line). Free of CUDA includes, so CPU builds test it too.
#pragma once
#include <cstdint>
#include <string_view>

namespace pathbench {

// C[m, n] = op(A)[m, k] · op(B)[k, n], row-major, op(X) = Xᵀ when trans_x; ld* are row strides in
// elements of A, B and C as stored.
struct GemmShape {
  bool trans_a = false;
  bool trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
};

// Throws pathbench::Error("<op>: matrix product ...: <problem>") unless m, n, k >= 0, every size
// fits cuBLAS's int, and each row stride is at least its row's length (and at least 1).
void check_gemm_shape(const GemmShape& s, std::string_view op);

}  // namespace pathbench
