// Token embedding lookup: out[N, C] = table[tokens[n], :].
#pragma once
#include <cstdint>

namespace pathbench {

template <typename T>
void embedding_forward(const int32_t* tokens, const T* table, T* out, int64_t n, int64_t c);
// dtable[V, C] += scatter of dout rows by token.
template <typename T>
void embedding_backward(const int32_t* tokens, const T* dout, T* dtable, int64_t n, int64_t c);

}  // namespace pathbench
