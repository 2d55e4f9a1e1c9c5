// blockOf, the inverse of blockRange (algorithms/partition.hpp): for every total and part count
// in a small sweep, every element lies in the block blockOf names, and the blocks tile the
// buffer in order (NCCL's layout: the first total % parts blocks have one element more).
#include <catch2/catch.hpp>

#include <cstdint>

#include "algorithms/partition.hpp"

using namespace weft;

TEST_CASE("blockOf names the blockRange block that holds each element, for 1..17 parts") {
  for (uint64_t parts = 1; parts <= 17; ++parts)
    for (uint64_t total : {0, 1, 2, 3, 5, 16, 17, 64, 100, 1023, 65537}) {
      uint64_t next = 0;  // where the next block must start
      for (uint64_t b = 0; b < parts; ++b) {
        const Range r = blockRange(total, parts, b);
        INFO("total " << total << ", parts " << parts << ", block " << b);
        REQUIRE(r.offset == next);
        REQUIRE(r.count == total / parts + (b < total % parts ? 1 : 0));
        uint64_t elsewhere = 0;  // elements of this block that blockOf puts in another
        for (uint64_t e = r.offset; e < r.offset + r.count; ++e)
          elsewhere += blockOf(total, parts, e) != b;
        CHECK(elsewhere == 0);
        next += r.count;
      }
      REQUIRE(next == total);
    }
}
