// The adaptive spin budget (transports/shm/spin_budget.hpp): a pure rule, checked step by step.
#include <catch2/catch.hpp>

#include "transports/shm/spin_budget.hpp"

using weft::SpinBudget;

TEST_CASE("spin budget: starts at the ceiling; waits that end while spinning keep it", "[shm][spin]") {
  SpinBudget b(1000, 200000);
  CHECK(b.ns() == 200000);
  for (int i = 0; i < 10; ++i) b.endedSpinning();
  CHECK(b.ns() == 200000);
}

TEST_CASE("spin budget: every wait that sleeps halves it, down to the floor", "[shm][spin]") {
  SpinBudget b(1000, 200000);
  const int64_t expected[] = {100000, 50000, 25000, 12500, 6250, 3125, 1562, 1000, 1000};
  for (int64_t e : expected) {
    b.endedSleeping();
    CHECK(b.ns() == e);
  }
}

TEST_CASE("spin budget: a wait that ends while yielding grows it to cover that wait twice",
          "[shm][spin]") {
  SpinBudget b(1000, 200000);
  for (int i = 0; i < 20; ++i) b.endedSleeping();
  REQUIRE(b.ns() == 1000);
  b.endedYielding(500);  // doubling the budget covers it
  CHECK(b.ns() == 2000);
  b.endedYielding(30000);  // the peer answered after 30 us: spin 60 us next time
  CHECK(b.ns() == 60000);
  b.endedYielding(5000000);  // never past the ceiling
  CHECK(b.ns() == 200000);
}

TEST_CASE("spin budget: a floor above the ceiling is the ceiling; a fixed budget stays fixed",
          "[shm][spin]") {
  SpinBudget fixed(1000, 1000);
  fixed.endedSleeping();
  fixed.endedYielding(1000000);
  CHECK(fixed.ns() == 1000);
  SpinBudget odd(5000, 2000);
  CHECK(odd.floorNs() == 2000);
  odd.endedSleeping();
  CHECK(odd.ns() == 2000);
}
