// The in-memory OutOfBand that transport tests share (tests/support/thread_oob.hpp).
#include "support/thread_oob.hpp"

#include <catch2/catch.hpp>

using namespace weft;
using namespace weft::test;

TEST_CASE("thread oob allGather returns every rank's blob, round after round") {
  const int n = 5;
  ThreadOobGroup group(n);
  std::vector<std::string> problems(n);
  auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
    for (int round = 0; round < 20; ++round) {
      std::vector<uint8_t> mine(static_cast<size_t>(rank + round), static_cast<uint8_t>(rank));
      auto all = oob.allGather(mine, Deadline::afterMs(60000));
      for (int r = 0; r < n; ++r) {
        if (all[r] !=
            std::vector<uint8_t>(static_cast<size_t>(r + round), static_cast<uint8_t>(r))) {
          problems[rank] =
              "round " + std::to_string(round) + ": wrong blob from rank " + std::to_string(r);
        }
      }
      oob.barrier(Deadline::afterMs(60000));
    }
  });
  for (int r = 0; r < n; ++r) {
    CHECK(errors[r].empty());
    CHECK(problems[r].empty());
  }
}

TEST_CASE(
    "thread oob: a rank whose deadline passes times out naming the missing ranks and releases the "
    "others") {
  ThreadOobGroup group(3);
  auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
    if (rank == 2) return;  // never arrives
    oob.barrier(rank == 0 ? Deadline::afterMs(50) : Deadline::never());
  });
  CHECK_THAT(errors[0], Catch::Contains("rank 0: barrier #0 timed out waiting for ranks 2"));
  CHECK_THAT(errors[1], Catch::Contains("abandoned"));  // released, not left waiting forever
  CHECK(errors[2].empty());
}

TEST_CASE("thread oob: abort releases waiters with weftRemoteError") {
  ThreadOobGroup group(2);
  weftResult_t result = weftSuccess;
  auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
    if (rank == 1) {
      group.abort("rank 1 gave up");
      return;
    }
    try {
      oob.barrier(Deadline::never());
    } catch (const Error& e) {
      result = e.result();
      throw;
    }
  });
  CHECK(result == weftRemoteError);
  CHECK_THAT(errors[0], Catch::Contains("rank 1 gave up"));
}
