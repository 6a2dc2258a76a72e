// Counter-based random numbers: every draw is a pure function of (key, counter), so data and
// initialization are identical on every machine and need no state beyond a key.
#pragma once
#include <cmath>
#include <cstdint>
#include <string_view>

namespace pathbench {

// SplitMix64 finalizer: a strong 64-bit mixing function.
inline uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Combines a key with one more value into a new key.
inline uint64_t combine_key(uint64_t key, uint64_t value) { return mix64(key ^ mix64(value + 0x632be59bd9b4e019ULL)); }

// FNV-1a hash of a string, for deriving keys from names.
inline uint64_t hash_string(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// A stream of random numbers: draw n is mix64(key, n).
class CounterRng {
 public:
  explicit CounterRng(uint64_t key) : key_(key) {}
  CounterRng(uint64_t key, std::string_view stream) : key_(combine_key(key, hash_string(stream))) {}

  uint64_t next_u64() { return combine_key(key_, counter_++); }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n).
  uint64_t below(uint64_t n) { return static_cast<uint64_t>(uniform() * static_cast<double>(n)); }
  bool bernoulli(double p) { return uniform() < p; }
  // The index of the stream's next draw; seek(n) makes draw n the next one.
  uint64_t position() const { return counter_; }
  void seek(uint64_t n) { counter_ = n; }
  // Standard normal (Box-Muller, one value per two draws).
  double normal() {
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t key_;
  uint64_t counter_ = 0;
};

}  // namespace pathbench
