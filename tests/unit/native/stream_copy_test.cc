#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "algorithms/shm/stream_copy.hpp"

TEST_CASE("streamCopy copies exactly, at every alignment and length around its block size") {
  std::vector<uint8_t> src(3 << 20), dst(src.size() + 256);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + (i >> 9));
  for (size_t length : {size_t{0}, size_t{1}, size_t{127}, size_t{4095}, size_t{4096},
                        size_t{4097}, size_t{65539}, size_t{(2 << 20) + 77}})
    for (size_t dstOffset : {0, 1, 31, 32, 33, 63})
      for (size_t srcOffset : {0, 5}) {
        std::fill(dst.begin(), dst.end(), 0xAB);
        weft::streamCopy(dst.data() + dstOffset, src.data() + srcOffset, length);
        INFO("length " << length << " dst+" << dstOffset << " src+" << srcOffset);
        for (size_t i = 0; i < dstOffset; ++i) REQUIRE(dst[i] == 0xAB);
        for (size_t i = 0; i < length; ++i) REQUIRE(dst[dstOffset + i] == src[srcOffset + i]);
        for (size_t i = dstOffset + length; i < dst.size(); ++i) REQUIRE(dst[i] == 0xAB);
      }
}

TEST_CASE(
    "outputs stream from 8 MiB on the host, outputs just read as inputs from 32 MiB where "
    "ranks share cores and never where each has a core") {
  using weft::streamOutput;
  const uint64_t MiB = 1 << 20;
  // Out of place: from 8 MiB of output on the host, whether or not the ranks share cores.
  for (bool shared : {false, true}) {
    CHECK_FALSE(streamOutput(3 * MiB, 2, false, shared));
    CHECK(streamOutput(4 * MiB, 2, false, shared));
    CHECK(streamOutput(2 * MiB, 4, false, shared));
  }
  // In place (the output lines are the input's, just read), ranks sharing cores: from 32 MiB.
  CHECK_FALSE(streamOutput(4 * MiB, 2, true, true));
  CHECK_FALSE(streamOutput(8 * MiB - 1, 4, true, true));
  CHECK(streamOutput(8 * MiB, 4, true, true));
  CHECK(streamOutput(16 * MiB, 2, true, true));
  // In place, a core each: never.
  CHECK_FALSE(streamOutput(16 * MiB, 2, true, false));
  CHECK_FALSE(streamOutput(uint64_t{1} << 40, 8, true, false));
}
