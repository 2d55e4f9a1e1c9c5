// Catch assertions from rank threads. Catch2 v2 is not thread-safe: every assertion and message
// updates one global run context. A test whose ranks are threads of the test process asserts on
// them with the RANK_ macros below, which take one process-wide mutex around the Catch macro.
// Serialising the rank threads' assertions is enough as long as the test case's main thread does
// not assert while they run (it only joins them). Assertions on the main thread stay plain.
//
// The expression is evaluated under the lock: call what waits for another rank (init, a
// collective, group end, stream synchronize or destroy, comm destroy) before the macro and check
// its result, else a rank waiting there for a peer holds the lock that the peer, at a check of
// its own, needs before it can arrive.
// INFO, CAPTURE and UNSCOPED_INFO must not be used on rank threads: their message stack is
// shared by all threads. Put what a failure must say into the checked expression instead.
// A RANK_CHECK that fails marks its thread (rankCheckFailed), so that onEveryRank
// (unit/api/api_support.hpp) names the rank, as it does for a failed RANK_REQUIRE.
#pragma once

#include <catch2/catch.hpp>
#include <mutex>

namespace weft::testing {

inline std::mutex& catchMutex() {
  static std::mutex mutex;
  return mutex;
}

// Set on this thread by a RANK_CHECK or RANK_CHECK_THAT that failed.
inline bool& rankCheckFailed() {
  thread_local bool failed = false;
  return failed;
}

// After a Catch assertion, under catchMutex().
inline void noteRankCheck() {
  if (!Catch::getResultCapture().lastAssertionPassed()) rankCheckFailed() = true;
}

}  // namespace weft::testing

#define RANK_REQUIRE(...)                                                    \
  do {                                                                       \
    std::lock_guard<std::mutex> weftCatchLock_(weft::testing::catchMutex()); \
    REQUIRE(__VA_ARGS__);                                                    \
  } while (false)

#define RANK_CHECK(...)                                                      \
  do {                                                                       \
    std::lock_guard<std::mutex> weftCatchLock_(weft::testing::catchMutex()); \
    CHECK(__VA_ARGS__);                                                      \
    weft::testing::noteRankCheck();                                          \
  } while (false)

#define RANK_CHECK_THAT(...)                                                 \
  do {                                                                       \
    std::lock_guard<std::mutex> weftCatchLock_(weft::testing::catchMutex()); \
    CHECK_THAT(__VA_ARGS__);                                                 \
    weft::testing::noteRankCheck();                                          \
  } while (false)
