// The adaptive spin budget (transports/shm/spin_budget.hpp): a pure rule, checked step by step.
#include <catch2/catch.hpp>

#include "transports/shm/spin_budget.hpp"

using weft::SpinBudget;

TEST_CASE("spin budget: starts at the floor, each spin that works doubles it, up to the ceiling",
          "[shm][spin]") {
  SpinBudget b(1000, 200000, 50, 50);
  CHECK(b.ns() == 1000);
  CHECK(b.yields() == 50);
  const int64_t expected[] = {2000, 4000, 8000, 16000, 32000, 64000, 128000, 200000, 200000};
  for (int64_t e : expected) {
    b.spinWorked();
    CHECK(b.ns() == e);
  }
}

TEST_CASE("spin budget: each wait longer than the ceiling halves it, down to the floor",
          "[shm][spin]") {
  SpinBudget b(1000, 200000, 50, 50);
  for (int i = 0; i < 8; ++i) b.spinWorked();
  REQUIRE(b.ns() == 200000);
  const int64_t expected[] = {100000, 50000, 25000, 12500, 6250, 3125, 1562, 1000, 1000};
  for (int64_t e : expected) {
    b.spinFailed(200001);
    CHECK(b.ns() == e);
  }
}

TEST_CASE("spin budget: a failed spin whose wait the ceiling covers sets it to twice the wait",
          "[shm][spin]") {
  SpinBudget b(1000, 200000, 50, 50);
  b.spinFailed(30000);  // the wait took 30 us: spinning 60 would have seen it end
  CHECK(b.ns() == 60000);
  b.spinFailed(150000);  // twice that is past the ceiling
  CHECK(b.ns() == 200000);
  b.spinFailed(200000);  // exactly the ceiling still counts
  CHECK(b.ns() == 200000);
  b.spinFailed(5000000);  // 5 ms: the peer was not running
  CHECK(b.ns() == 100000);
}

TEST_CASE("spin budget: mixed outcomes move it both ways", "[shm][spin]") {
  SpinBudget b(1000, 200000, 50, 50);
  b.spinWorked();         // 2000
  b.spinWorked();         // 4000
  b.spinFailed(1000000);  // 2000
  b.spinWorked();         // 4000
  b.spinWorked();         // 8000
  b.spinFailed(1000000);  // 4000
  b.spinFailed(1000000);  // 2000
  CHECK(b.ns() == 2000);
  b.spinFailed(2500);  // 5000
  CHECK(b.ns() == 5000);
}

TEST_CASE("spin budget: a floor above the ceiling is the ceiling, a zero budget stays zero",
          "[shm][spin]") {
  SpinBudget none(0, 0, 0, 0);
  none.spinWorked();
  CHECK(none.ns() == 0);
  none.spinFailed(1000);
  CHECK(none.ns() == 0);
  none.yieldsWorked();
  CHECK(none.yields() == 0);
  CHECK_FALSE(none.spins());
  SpinBudget odd(5000, 2000, 10, 10);
  CHECK(odd.floorNs() == 2000);
  CHECK(odd.ns() == 2000);
  odd.spinFailed(1000000);
  CHECK(odd.ns() == 2000);
  CHECK(odd.spins());
}

TEST_CASE("spin budget: yields adapt between their bounds, starting at the most", "[shm][spin]") {
  SpinBudget b(0, 0, 2, 50);  // ranks that outnumber the cores
  CHECK(b.yields() == 50);
  const int down[] = {25, 12, 6, 3, 2, 2};
  for (int e : down) {
    b.yieldsFailed();
    CHECK(b.yields() == e);
  }
  const int up[] = {4, 8, 16, 32, 50, 50};
  for (int e : up) {
    b.yieldsWorked();
    CHECK(b.yields() == e);
  }
  SpinBudget fixed(1000, 200000, 50, 50);  // ranks with a core each: always 50
  fixed.yieldsFailed();
  CHECK(fixed.yields() == 50);
}
