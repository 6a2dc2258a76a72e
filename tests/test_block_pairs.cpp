// The pairs of blocks that two-warpgroup kernels take (block_pairs.h: key blocks of the key-major
// backward, query chunks of PaTH's query chain): every block belongs to exactly one warpgroup of one
// pair, and a pair's blocks lie in one span.
#include <catch2/catch.hpp>

#include <vector>

#include "core/attention/cuda/block_pairs.h"

using namespace pathbench::cuda;

TEST_CASE("block pairs cover every block once, within one span", "[attention]") {
  for (int blocks = 1; blocks <= 40; ++blocks)
    for (int span = 0; span <= 12; ++span) {  // 0: causal, no spans
      CAPTURE(blocks, span);
      const bool causal = span == 0;
      std::vector<int> owners(blocks, 0);
      for (int pair = 0; pair < block_pairs(causal, blocks, span); ++pair) {
        const int first = pair_first_block(causal, pair, span);
        if (!causal) CHECK(first % span % 2 == 0);  // pairs start at even offsets in their span
        for (int g = 0; g < 2; ++g) {
          if (!pair_owns_block(causal, first, g, blocks, span)) continue;
          REQUIRE(first + g < blocks);
          ++owners[first + g];
          if (!causal) CHECK((first + g) / span == first / span);
        }
      }
      for (int b = 0; b < blocks; ++b) CHECK(owners[b] == 1);
    }
  // The anchors' spans: 64 blocks in spans of 7 take 10 spans of 4 pairs (each span's last pair
  // without its second block); causal, 32 pairs.
  CHECK(block_pairs(false, 64, 7) == 40);
  CHECK(pair_first_block(false, 3, 7) == 6);
  CHECK_FALSE(pair_owns_block(false, 6, 1, 64, 7));
  CHECK(pair_first_block(false, 4, 7) == 7);
  CHECK(block_pairs(true, 64, 0) == 32);
}
