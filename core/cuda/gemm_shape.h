// Checks of a row-major matrix product's sizes and row strides before it reaches cuBLAS, so a bad
// call fails with one pathbench::Error naming the op and shapes (cuBLAS would also print its own
// log line). Free of CUDA includes, so CPU builds test it too.
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"

namespace pathbench {

// C[m, n] = op(A)[m, k] · op(B)[k, n], row-major, op(X) = Xᵀ when trans_x; ld* are row strides in
// elements of A, B and C as stored.
struct GemmShape {
  bool trans_a = false;
  bool trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
};

namespace detail {

// The problem with the shape, empty when it is valid.
inline std::string gemm_shape_problem(const GemmShape& s) {
  if (s.m < 0 || s.n < 0 || s.k < 0) return "sizes must be >= 0";
  if (std::max({s.m, s.n, s.k, s.lda, s.ldb, s.ldc}) > INT_MAX) return fmt::format("sizes exceed {}", INT_MAX);
  // Stored row lengths: A is [m, k] (or [k, m] when transposed), B is [k, n] (or [n, k]), C is [m, n].
  const int64_t a_row = std::max<int64_t>(1, s.trans_a ? s.m : s.k);
  const int64_t b_row = std::max<int64_t>(1, s.trans_b ? s.k : s.n);
  const int64_t c_row = std::max<int64_t>(1, s.n);
  if (s.lda < a_row) return fmt::format("lda must be >= {}", a_row);
  if (s.ldb < b_row) return fmt::format("ldb must be >= {}", b_row);
  if (s.ldc < c_row) return fmt::format("ldc must be >= {}", c_row);
  return "";
}

}  // namespace detail

// Throws pathbench::Error("<op>: matrix product ...: <problem>") unless m, n, k >= 0, every size
// fits cuBLAS's int, and each row stride is at least its row's length (and at least 1).
inline void check_gemm_shape(const GemmShape& s, std::string_view op) {
  const std::string problem = detail::gemm_shape_problem(s);
  if (problem.empty()) return;
  throw Error(fmt::format("{}: matrix product C[{}, {}] = A{}[{}, {}] · B{}[{}, {}] (lda {}, ldb {}, ldc {}): {}", op,
                          s.m, s.n, s.trans_a ? "ᵀ" : "", s.m, s.k, s.trans_b ? "ᵀ" : "", s.k, s.n, s.lda, s.ldb,
                          s.ldc, problem));
}

}  // namespace pathbench
