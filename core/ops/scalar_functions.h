// Numerically stable scalar functions shared by elementwise ops: sigmoid, log-sigmoid, softplus.
#pragma once
#include <algorithm>
#include <cmath>

namespace pathbench {

template <typename T>
T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

// log(1 + eˣ) without overflow
template <typename T>
T softplus(T x) {
  return std::max(x, T(0)) + std::log1p(std::exp(-std::abs(x)));
}

// log σ(x) = −softplus(−x)
template <typename T>
T log_sigmoid(T x) {
  return std::min(x, T(0)) - std::log1p(std::exp(-std::abs(x)));
}

}  // namespace pathbench
