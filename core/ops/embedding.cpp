// Token embedding gather and its scatter-add backward.
#include "core/ops/embedding.h"

#include <cstring>

namespace pathbench {

template <typename T>
void embedding_forward(const int32_t* tokens, const T* table, T* out, int64_t n, int64_t c) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n; ++r) std::memcpy(out + r * c, table + int64_t(tokens[r]) * c, sizeof(T) * c);
}

template <typename T>
void embedding_backward(const int32_t* tokens, const T* dout, T* dtable, int64_t n, int64_t c) {
  // Serial over rows: several rows hit the same token, and a fixed order keeps results bit-identical.
  for (int64_t r = 0; r < n; ++r) {
    T* dst = dtable + int64_t(tokens[r]) * c;
    const T* src = dout + r * c;
    for (int64_t j = 0; j < c; ++j) dst[j] += src[j];
  }
}

template void embedding_forward<float>(const int32_t*, const float*, float*, int64_t, int64_t);
template void embedding_forward<double>(const int32_t*, const double*, double*, int64_t, int64_t);
template void embedding_backward<float>(const int32_t*, const float*, float*, int64_t, int64_t);
template void embedding_backward<double>(const int32_t*, const double*, double*, int64_t, int64_t);

}  // namespace pathbench
