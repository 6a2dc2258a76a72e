// Eigen aliases for row-major matrices and maps over raw buffers, used by every CPU op.
#pragma once
#include <Eigen/Core>

namespace pathbench {

template <typename T>
using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using MatrixMap = Eigen::Map<Matrix<T>>;
template <typename T>
using ConstMatrixMap = Eigen::Map<const Matrix<T>>;
template <typename T>
using Vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;
template <typename T>
using VectorMap = Eigen::Map<Vector<T>>;
template <typename T>
using ConstVectorMap = Eigen::Map<const Vector<T>>;

// A rows×cols row-major view of a buffer.
template <typename T>
MatrixMap<T> as_matrix(T* p, Eigen::Index rows, Eigen::Index cols) {
  return MatrixMap<T>(p, rows, cols);
}
template <typename T>
ConstMatrixMap<T> as_matrix(const T* p, Eigen::Index rows, Eigen::Index cols) {
  return ConstMatrixMap<T>(p, rows, cols);
}

}  // namespace pathbench
