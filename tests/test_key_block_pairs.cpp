// The pairs of key blocks that the two-warpgroup key-major backward takes (key_block_pairs.h): every
// key block belongs to exactly one warpgroup of one pair, and a pair's blocks lie in one span.
#include <catch2/catch.hpp>

#include <vector>

#include "core/attention/cuda/key_block_pairs.h"

using namespace pathbench::cuda;

TEST_CASE("key-major pairs cover every key block once, within one span", "[attention]") {
  for (int blocks = 1; blocks <= 40; ++blocks)
    for (int span = 0; span <= 12; ++span) {  // 0: causal, no spans
      CAPTURE(blocks, span);
      const bool causal = span == 0;
      std::vector<int> owners(blocks, 0);
      for (int pair = 0; pair < key_block_pairs(causal, blocks, span); ++pair) {
        const int first = pair_first_key_block(causal, pair, span);
        if (!causal) CHECK(first % span % 2 == 0);  // pairs start at even offsets in their span
        for (int g = 0; g < 2; ++g) {
          if (!pair_owns_key_block(causal, first, g, blocks, span)) continue;
          REQUIRE(first + g < blocks);
          ++owners[first + g];
          if (!causal) CHECK((first + g) / span == first / span);
        }
      }
      for (int kb = 0; kb < blocks; ++kb) CHECK(owners[kb] == 1);
    }
  // The anchors' spans: 64 blocks in spans of 7 take 10 spans of 4 pairs (each span's last pair
  // without its second block); causal, 32 pairs.
  CHECK(key_block_pairs(false, 64, 7) == 40);
  CHECK(pair_first_key_block(false, 3, 7) == 6);
  CHECK_FALSE(pair_owns_key_block(false, 6, 1, 64, 7));
  CHECK(pair_first_key_block(false, 4, 7) == 7);
  CHECK(key_block_pairs(true, 64, 0) == 32);
}
