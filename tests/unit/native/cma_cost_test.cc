#include "algorithms/shm/cma_cost.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

using weft::Collective;

TEST_CASE("cmaCostRatio measures a positive, finite cost on this machine") {
  // Self-CMA is always allowed, so 0 (refused) would be a bug here; the value itself is the
  // machine's, never asserted.
  const double ratio = weft::cmaCostRatio(64 << 10, 2);
  REQUIRE(std::isfinite(ratio));
  REQUIRE(ratio > 0);
  REQUIRE(weft::cmaCostRatio(0, 2) == 0);
  REQUIRE(weft::cmaCostRatio(4096, 0) == 0);
}

TEST_CASE("agreedCmaCostRatio is the median, whatever the order") {
  REQUIRE(weft::agreedCmaCostRatio({}) == 0);
  REQUIRE(weft::agreedCmaCostRatio({3.0}) == 3.0);
  REQUIRE(weft::agreedCmaCostRatio({4.0, 1.0}) == 2.5);
  REQUIRE(weft::agreedCmaCostRatio({9.0, 1.0, 2.0}) == 2.0);
  REQUIRE(weft::agreedCmaCostRatio({2.0, 9.0, 1.0, 3.0}) == 2.5);
}

TEST_CASE("cmaPreferred: scatter always, the rest only where CMA is cheap") {
  const double cheap = weft::kCmaCheapRatio - 0.1, dear = weft::kCmaCheapRatio + 0.1;
  const uint64_t small = 256 << 10;  // bytes per block
  for (int ranks : {2, 3, 4, 8}) {
    INFO(ranks << " ranks");
    REQUIRE(weft::cmaPreferred(Collective::Scatter, ranks, dear, small));
    REQUIRE(weft::cmaPreferred(Collective::Scatter, ranks, 0, small));
    for (Collective c : {Collective::AllGather, Collective::AlltoAll, Collective::Gather}) {
      REQUIRE(weft::cmaPreferred(c, ranks, cheap, small));
      REQUIRE_FALSE(weft::cmaPreferred(c, ranks, dear, small));
      REQUIRE_FALSE(weft::cmaPreferred(c, ranks, 0, small));  // not measured
    }
    REQUIRE(weft::cmaPreferred(Collective::Broadcast, ranks, cheap, small) == (ranks == 2));
    REQUIRE(weft::cmaPreferred(Collective::AllReduce, ranks, cheap, small) == (ranks <= 4));
    for (Collective c : {Collective::Broadcast, Collective::AllReduce})
      REQUIRE_FALSE(weft::cmaPreferred(c, ranks, dear, small));
    for (Collective c : {Collective::ReduceScatter, Collective::Reduce}) {
      REQUIRE_FALSE(weft::cmaPreferred(c, ranks, cheap, small));
      REQUIRE_FALSE(weft::cmaPreferred(c, ranks, dear, small));
    }
  }
}

TEST_CASE("cmaPreferred: large outputs stage (streamed), whatever CMA costs") {
  const double cheap = 1.0;
  // The host's outputs together (every rank's output: a block from each rank for allgather,
  // alltoall and a gather's root; one block for the rest): at the limits and just above.
  const uint64_t limit = weft::kCmaMaxHostOutputBytes;
  for (uint64_t ranks : {2, 4}) {
    INFO(ranks << " ranks");
    const int r = static_cast<int>(ranks);
    for (Collective c : {Collective::AllGather, Collective::AlltoAll, Collective::Gather}) {
      REQUIRE(weft::cmaPreferred(c, r, cheap, limit / ranks / ranks));
      REQUIRE_FALSE(weft::cmaPreferred(c, r, cheap, limit / ranks / ranks + 1));
    }
    REQUIRE(weft::cmaPreferred(Collective::Scatter, r, cheap, limit));
  }
  REQUIRE(weft::cmaPreferred(Collective::Broadcast, 2, cheap, limit / 2));
  REQUIRE_FALSE(weft::cmaPreferred(Collective::Broadcast, 2, cheap, limit / 2 + 1));
  REQUIRE(weft::cmaPreferred(Collective::AllReduce, 2, cheap, limit / 2));
  REQUIRE_FALSE(weft::cmaPreferred(Collective::AllReduce, 2, cheap, limit / 2 + 1));
  // Measured: 2-rank allreduce reads through CMA at 16 MiB (0.87x) and stages at 32 MiB (1.17x
  // with CMA), 4-rank allgather stages at 16 MiB of output per rank, 4 MiB blocks (1.4x); a
  // 2-rank allgather of 16 MiB (8 MiB blocks) reads through CMA (0.77x).
  REQUIRE_FALSE(weft::cmaPreferred(Collective::AllReduce, 2, cheap, 32 << 20));
  REQUIRE(weft::cmaPreferred(Collective::AllReduce, 2, cheap, 16 << 20));
  REQUIRE_FALSE(weft::cmaPreferred(Collective::AllGather, 4, cheap, 4 << 20));
  REQUIRE(weft::cmaPreferred(Collective::AllGather, 2, cheap, 8 << 20));
}

TEST_CASE("cmaPreferred: allreduce on 3-4 ranks reads through CMA only at mid sizes") {
  const double cheap = 1.0;
  const uint64_t from = weft::kCmaAllReduceFromBytes, limit = weft::kCmaAllReduceMaxHostOutputBytes;
  for (uint64_t ranks : {3, 4}) {
    INFO(ranks << " ranks");
    const int r = static_cast<int>(ranks);
    REQUIRE_FALSE(weft::cmaPreferred(Collective::AllReduce, r, cheap, from - 1));
    REQUIRE(weft::cmaPreferred(Collective::AllReduce, r, cheap, from));
    REQUIRE(weft::cmaPreferred(Collective::AllReduce, r, cheap, limit / ranks));
    REQUIRE_FALSE(weft::cmaPreferred(Collective::AllReduce, r, cheap, limit / ranks + 1));
  }
  // Measured: 4 ranks read through CMA at 256 KiB-4 MiB (0.64-0.95x) and stage at 128 KiB
  // (1.13x with CMA) and 8 MiB (1.27x); 5, 6 and 8 ranks stage (1.05-2.08x).
  REQUIRE_FALSE(weft::cmaPreferred(Collective::AllReduce, 4, cheap, 128 << 10));
  REQUIRE(weft::cmaPreferred(Collective::AllReduce, 4, cheap, 4 << 20));
  REQUIRE_FALSE(weft::cmaPreferred(Collective::AllReduce, 4, cheap, 8 << 20));
  for (int ranks : {5, 6, 8})
    REQUIRE_FALSE(weft::cmaPreferred(Collective::AllReduce, ranks, cheap, 1 << 20));
}
