// The default incremental decoding of a position encoding: keep every token's inputs and rerun the
// parallel forward over the whole prefix at each step, returning its last row.
#include <algorithm>
#include <stdexcept>

#include "core/attention/encoding.h"

namespace pathbench {

namespace {

// Every token's inputs so far, appended one step at a time.
template <typename T>
struct PrefixCache : DecodeCache {
  AttentionDims dims;          // batch, heads, head_dim, width of the decoding batch
  int64_t length = 0;          // tokens so far
  std::vector<T> x;            // [t][B, C]
  std::vector<T> q, k, v;      // [t][B, H, D]
  std::vector<T> xf, qf, kf, vf, of;  // the prefix in forward's layouts: [B, t, C] and [B, H, t, D]
};

}  // namespace

template <typename T>
std::unique_ptr<DecodeCache> PositionEncoding<T>::start_decode(const AttentionDims& dims) {
  auto cache = std::make_unique<PrefixCache<T>>();
  cache->dims = dims;
  return cache;
}

template <typename T>
void PositionEncoding<T>::decode_step(ParameterSet<T>& params, DecodeCache& base, const DecodeInputs<T>& in, T* o) {
  auto* cache = dynamic_cast<PrefixCache<T>*>(&base);
  if (!cache) throw std::logic_error("decode_step: cache was not made by this encoding's start_decode");
  const int64_t b = cache->dims.batch, h = cache->dims.heads, d = cache->dims.head_dim, c = cache->dims.width;
  const int64_t bh = b * h;
  cache->x.insert(cache->x.end(), in.x, in.x + b * c);
  cache->q.insert(cache->q.end(), in.q, in.q + bh * d);
  cache->k.insert(cache->k.end(), in.k, in.k + bh * d);
  cache->v.insert(cache->v.end(), in.v, in.v + bh * d);
  const int64_t t = ++cache->length;
  cache->xf.resize(b * t * c);
  for (int64_t s = 0; s < t; ++s)
    for (int64_t bi = 0; bi < b; ++bi)
      std::copy_n(&cache->x[(s * b + bi) * c], c, &cache->xf[(bi * t + s) * c]);
  const std::pair<std::vector<T>*, std::vector<T>*> per_head[] = {
      {&cache->q, &cache->qf}, {&cache->k, &cache->kf}, {&cache->v, &cache->vf}};
  for (const auto& [steps, full] : per_head) {
    full->resize(bh * t * d);
    for (int64_t s = 0; s < t; ++s)
      for (int64_t sl = 0; sl < bh; ++sl) std::copy_n(&(*steps)[(s * bh + sl) * d], d, &(*full)[(sl * t + s) * d]);
  }
  cache->of.resize(bh * t * d);
  AttentionDims dims = cache->dims;
  dims.length = t;
  AttentionInputs<T> full{dims, cache->xf.data(), cache->qf.data(), cache->kf.data(), cache->vf.data()};
  forward(params, full, cache->of.data());
  for (int64_t sl = 0; sl < bh; ++sl) std::copy_n(&cache->of[(sl * t + t - 1) * d], d, o + sl * d);
}

template class PositionEncoding<float>;
template class PositionEncoding<double>;

}  // namespace pathbench
