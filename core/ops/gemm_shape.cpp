// The size and stride checks of a row-major matrix product.
#include "core/ops/gemm_shape.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <string>

#include "core/error.h"

namespace pathbench {

namespace {

// The problem with the shape, empty when it is valid.
std::string gemm_shape_problem(const GemmShape& s) {
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

}  // namespace

void check_gemm_shape(const GemmShape& s, std::string_view op) {
  const std::string problem = gemm_shape_problem(s);
  if (problem.empty()) return;
  throw Error(fmt::format("{}: matrix product C[{}, {}] = A{}[{}, {}] · B{}[{}, {}] (lda {}, ldb {}, ldc {}): {}", op,
                          s.m, s.n, s.trans_a ? "ᵀ" : "", s.m, s.k, s.trans_b ? "ᵀ" : "", s.k, s.n, s.lda, s.ldb,
                          s.ldc, problem));
}

}  // namespace pathbench
