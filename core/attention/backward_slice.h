// Eigen views of one [T, D] slice (of the batch_heads contiguous slices) of the tensors a CPU
// attention backward reads (q, k, v, dO) and writes (dq, dk, dv). dk and dv start at zero: the
// kernels accumulate into them block of rows by block of rows.
#pragma once
#include <cstdint>

#include "core/linalg.h"

namespace pathbench {

template <typename T>
struct BackwardSlice {
  ConstMatrixMap<T> q, k, v, dout;
  MatrixMap<T> dq, dk, dv;
};

// Args: any kernel argument struct with length, head_dim, q, k and v (kernel_args.h).
template <typename T, class Args>
BackwardSlice<T> backward_slice(const Args& a, const T* d_o, T* dq, T* dk, T* dv, int64_t slice) {
  const int64_t len = a.length, d = a.head_dim, off = slice * len * d;
  BackwardSlice<T> s{as_matrix(a.q + off, len, d),  as_matrix(a.k + off, len, d), as_matrix(a.v + off, len, d),
                     as_matrix(d_o + off, len, d),  as_matrix(dq + off, len, d),  as_matrix(dk + off, len, d),
                     as_matrix(dv + off, len, d)};
  s.dk.setZero();
  s.dv.setZero();
  return s;
}

}  // namespace pathbench
