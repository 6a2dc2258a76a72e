// Conversions between the projection layout [B, T, H, D] and the per-head layout [B, H, T, D].
#pragma once
#include <cstdint>
#include <cstring>

namespace pathbench {

// src [B, T, H, D] → dst [B, H, T, D]
template <typename T>
void split_heads(const T* src, T* dst, int64_t b, int64_t t, int64_t h, int64_t d) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t ti = 0; ti < t; ++ti)
      for (int64_t hi = 0; hi < h; ++hi)
        std::memcpy(dst + ((bi * h + hi) * t + ti) * d, src + ((bi * t + ti) * h + hi) * d, sizeof(T) * d);
}

// src [B, H, T, D] → dst [B, T, H, D]
template <typename T>
void merge_heads(const T* src, T* dst, int64_t b, int64_t t, int64_t h, int64_t d) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t ti = 0; ti < t; ++ti)
      for (int64_t hi = 0; hi < h; ++hi)
        std::memcpy(dst + ((bi * t + ti) * h + hi) * d, src + ((bi * h + hi) * t + ti) * d, sizeof(T) * d);
}

}  // namespace pathbench
