// Waiting on a shared flag (transports/shm/flag.hpp): a wait ends when the flag reaches its
// target, whichever stage it is in (spinning, yielding or asleep on the futex), with the budget
// of ranks that have a core each and of ranks that share cores; otherwise it ends with the
// deadline, the abort flag or a peer check, each an error that says which wait and whom it
// waited for. Thread ranks stand in for processes: the futex is shared either way.
#include "transports/shm/flag.hpp"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "lib/base/error.hpp"

using weft::SharedFlag;
using weft::WaitContext;

namespace {

WaitContext contextFor(weft::SpinBudget* budget, int64_t timeoutMs) {
  WaitContext c;
  c.timeoutMs = timeoutMs;
  c.spin = budget;
  c.prefix = "rank 0 of 2";
  c.op.fallback = "AllReduce #7";
  return c;
}

// Runs waitFor on this thread while another publishes `value` after `delay`.
void publishAfter(SharedFlag& flag, uint32_t value, std::chrono::milliseconds delay,
                  const WaitContext& context, uint32_t target) {
  std::thread publisher([&] {
    std::this_thread::sleep_for(delay);
    flag.publish(value);
  });
  try {
    weft::waitFor(flag, target, context, 1);
  } catch (...) {
    publisher.join();
    throw;
  }
  publisher.join();
}

}  // namespace

TEST_CASE("waitFor returns once the flag reaches its target, with either budget, early or late",
          "[shm][flag]") {
  const bool oversubscribed = GENERATE(false, true);
  // 0 ms: the publish usually lands while the waiter spins or yields; 30 ms: long after the
  // waiter's spin and yields, so it is asleep on the futex (the publish must wake it).
  const int delayMs = GENERATE(0, 30);
  CAPTURE(oversubscribed, delayMs);
  auto budget = weft::makeSpinBudget(oversubscribed);
  const WaitContext context = contextFor(budget.get(), 60000);
  SharedFlag flag;
  for (uint32_t call = 1; call <= 3; ++call) {
    publishAfter(flag, call, std::chrono::milliseconds(delayMs), context, call);
    CHECK(flag.load() == call);
  }
  CHECK(flag.sleepers.load() == 0);  // every sleeper counted itself out
}

TEST_CASE("waitFor compares in sequence space: a value past the target, across the wrap, is reached",
          "[shm][flag]") {
  auto budget = weft::makeSpinBudget(true);
  const WaitContext context = contextFor(budget.get(), 60000);
  SharedFlag flag;
  flag.value.store(3);  // 0xFFFFFFFE + 5, wrapped
  weft::waitFor(flag, 0xFFFFFFFEu, context, 1);
  flag.value.store(0xFFFFFFFFu);
  weft::waitFor(flag, 0xFFFFFFF0u, context, 1);
  // And a target just past the wrap is awaited, then reached by a publish.
  publishAfter(flag, 1, std::chrono::milliseconds(0), context, 1);
}

TEST_CASE("a wait nobody ends times out with weftTimeout naming the wait and the rank",
          "[shm][flag]") {
  const bool oversubscribed = GENERATE(false, true);
  CAPTURE(oversubscribed);
  auto budget = weft::makeSpinBudget(oversubscribed);
  const WaitContext context = contextFor(budget.get(), 50);
  SharedFlag flag;
  flag.publish(4);
  try {
    weft::waitFor(flag, 5, context, 3);
    FAIL("the wait returned");
  } catch (const weft::Error& e) {
    CHECK(e.result() == weftTimeout);
    const std::string what = e.what();
    CHECK_THAT(what, Catch::Contains("rank 0 of 2: AllReduce #7 timed out after 50 ms"));
    CHECK_THAT(what, Catch::Contains("still waiting for rank(s) 3"));
  }
  CHECK(flag.sleepers.load() == 0);
}

TEST_CASE("an abort raised during a wait ends it with the aborted result", "[shm][flag]") {
  const bool oversubscribed = GENERATE(false, true);
  CAPTURE(oversubscribed);
  auto budget = weft::makeSpinBudget(oversubscribed);
  std::atomic<bool> aborted{false};
  WaitContext context = contextFor(budget.get(), 60000);
  context.abortFlag = &aborted;
  SharedFlag flag;
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    aborted.store(true);
  });
  std::optional<weft::Error> error;
  try {
    weft::waitFor(flag, 1, context, 1);
  } catch (const weft::Error& e) {
    error = e;
  }
  aborter.join();  // before any check: a failed REQUIRE must not destroy a joinable thread
  REQUIRE(error);
  CHECK(error->result() == weft::kAbortedResult);
  CHECK_THAT(std::string(error->what()), Catch::Contains("rank 0 of 2: AllReduce #7: stopped"));
}

TEST_CASE("a peer check that throws ends a sleeping wait with its error", "[shm][flag]") {
  auto budget = weft::makeSpinBudget(true);
  std::atomic<int> checks{0};
  WaitContext context = contextFor(budget.get(), 60000);
  context.checkPeers = [&] {
    if (++checks == 3) weft::fail(weftRemoteError, "rank 1 (pid 42) died");
  };
  SharedFlag flag;
  try {
    weft::waitFor(flag, 1, context, 1);
    FAIL("the wait returned");
  } catch (const weft::Error& e) {
    CHECK(e.result() == weftRemoteError);
    CHECK_THAT(std::string(e.what()), Catch::Contains("rank 1 (pid 42) died"));
  }
  CHECK(checks.load() == 3);
  CHECK(flag.sleepers.load() == 0);
}

TEST_CASE("ranks that share cores wait without spinning, ranks with a core each spin first",
          "[shm][flag]") {
  CHECK_FALSE(weft::makeSpinBudget(true)->spins());
  CHECK(weft::makeSpinBudget(false)->spins());
}
