#include "algorithms/shm/cpu_spread.hpp"

#include <catch2/catch.hpp>
#include <vector>

using weft::crowded;
using weft::leastCrowdedCpu;
using weft::ranksOnMyCpu;

TEST_CASE("ranksOnMyCpu counts the ranks on my CPU, and only for the highest of them") {
  const std::vector<int32_t> cpus = {0, 0, 1, 0};
  REQUIRE(ranksOnMyCpu(cpus, 3, 0) == 3);
  REQUIRE(ranksOnMyCpu(cpus, 0, 0) == 0);  // ranks 1 and 3 share CPU 0 and are higher
  REQUIRE(ranksOnMyCpu(cpus, 1, 0) == 0);
  REQUIRE(ranksOnMyCpu(cpus, 2, 1) == 1);
  // My own entry may be stale: where I run now counts.
  REQUIRE(ranksOnMyCpu(cpus, 2, 0) == 0);
  REQUIRE(ranksOnMyCpu(std::vector<int32_t>{5, -1}, 1, 5) == 2);
  REQUIRE(ranksOnMyCpu(std::vector<int32_t>{-1, -1}, 1, 5) == 1);
}

TEST_CASE("crowded: more ranks on one CPU than their share, rounded up") {
  REQUIRE(crowded(2, 2, 2));
  REQUIRE_FALSE(crowded(1, 2, 2));
  REQUIRE_FALSE(crowded(2, 4, 2));
  REQUIRE(crowded(3, 4, 2));
  REQUIRE_FALSE(crowded(3, 5, 2));  // 5 ranks on 2 CPUs: 3 and 2 is as even as it gets
  REQUIRE(crowded(4, 5, 2));
  REQUIRE(crowded(2, 3, 4));
  REQUIRE_FALSE(crowded(8, 8, 1));  // one CPU: nowhere to go
  REQUIRE_FALSE(crowded(2, 2, 0));
}

TEST_CASE("leastCrowdedCpu: the allowed CPU with the fewest ranks, if moving helps both") {
  const std::vector<int32_t> both = {0, 1};
  // Two ranks on CPU 0, CPU 1 free.
  REQUIRE(leastCrowdedCpu(std::vector<int32_t>{0, 0}, 0, 2, both) == 1);
  // Not allowed there: stay.
  REQUIRE(leastCrowdedCpu(std::vector<int32_t>{0, 0}, 0, 2, std::vector<int32_t>{0}) == -1);
  // Three on CPU 0, one on CPU 1: 2 and 2 after the move.
  REQUIRE(leastCrowdedCpu(std::vector<int32_t>{0, 0, 1, 0}, 0, 3, both) == 1);
  // Two and two: a move would only swap the crowding.
  REQUIRE(leastCrowdedCpu(std::vector<int32_t>{0, 1, 1, 0}, 0, 2, both) == -1);
  // The fewest wins, the lowest CPU on a tie, and my own CPU is never a target.
  const std::vector<int32_t> four = {0, 1, 2, 3};
  REQUIRE(leastCrowdedCpu(std::vector<int32_t>{2, 2, 2, 1, 0}, 2, 3, four) == 3);
  REQUIRE(leastCrowdedCpu(std::vector<int32_t>{2, 2, 2, 1, 0, 3}, 2, 3, four) == 0);
  REQUIRE(leastCrowdedCpu(std::vector<int32_t>{2, 2}, 2, 2, std::vector<int32_t>{2, 7}) == 7);
}
