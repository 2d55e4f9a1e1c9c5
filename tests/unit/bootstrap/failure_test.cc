// Ranks that disagree, ranks that never come, and aborts: every rank returns, with an error that
// says what went wrong and names the ranks involved.
#include <catch2/catch.hpp>

#include "rank_threads.hpp"

using namespace weft;
using namespace weft::test;
using Catch::Matchers::Contains;

TEST_CASE("ranks that disagree on nranks all get weftInvalidUsage naming both ranks") {
  auto root = startRoot();
  std::vector<Outcome> outcomes(4);
  {
    RankThreads threads;
    threads.join(outcomes[0], root->id(), 0, 4);
    REQUIRE(root->waitForJoined(1, Deadline::afterMs(kGenerousMs)));
    threads.join(outcomes[2], root->id(), 2, 3);  // the odd one out, after rank 0
    threads.join(outcomes[1], root->id(), 1, 4);
    threads.join(outcomes[3], root->id(), 3, 4);
  }
  for (size_t r = 0; r < outcomes.size(); ++r) {
    INFO("rank " << r << ": " << outcomes[r].message);
    CHECK(outcomes[r].result == weftInvalidUsage);
    CHECK_THAT(outcomes[r].message,
               Contains("rank 2 joined with nranks=3 but rank 0 joined with nranks=4"));
  }
  // The failed round ends once the four have been told, and a one-round root then finishes
  // (the ranks may hear of it before the root has finished: wait for that).
  CHECK(root->waitFinished(Deadline::afterMs(kGenerousMs)));
  CHECK(root->joined().empty());
}

TEST_CASE("two processes claiming the same rank get weftInvalidUsage naming the rank") {
  auto root = startRoot();
  std::vector<Outcome> outcomes(3);
  {
    RankThreads threads;
    threads.join(outcomes[0], root->id(), 1, 3);
    REQUIRE(root->waitForJoined(1, Deadline::afterMs(kGenerousMs)));
    threads.join(outcomes[1], root->id(), 1, 3);
    threads.join(outcomes[2], root->id(), 0, 3);
  }
  for (size_t i = 0; i < outcomes.size(); ++i) {
    INFO("thread " << i << ": " << outcomes[i].message);
    CHECK(outcomes[i].result == weftInvalidUsage);
    CHECK_THAT(outcomes[i].message, Contains("rank 1 joined twice with nranks=3"));
  }
}

TEST_CASE("when a rank never comes, the others time out with a message naming it") {
  RootOptions options;
  options.rounds = 0;
  auto root = startRoot(options);
  std::vector<Outcome> outcomes(3);
  const auto start = Clock::now();
  {
    RankThreads threads;
    for (int r = 0; r < 3; ++r)
      threads.join(outcomes[static_cast<size_t>(r)], root->id(), r, 4, 1500);
  }
  CHECK(Clock::now() - start < std::chrono::milliseconds(kGenerousMs));
  for (size_t r = 0; r < outcomes.size(); ++r) {
    INFO("rank " << r << ": " << outcomes[r].message);
    CHECK(outcomes[r].result == weftTimeout);
    CHECK_THAT(outcomes[r].message, Contains("waiting for rank 3 to join"));
  }
  // The root has forgotten the ranks that gave up: a complete job forms afterwards.
  std::vector<Outcome> later(2);
  {
    RankThreads threads;
    for (int r = 0; r < 2; ++r) threads.join(later[static_cast<size_t>(r)], root->id(), r, 2);
  }
  for (const Outcome& o : later) {
    INFO(o.message);
    CHECK(o.ok());
  }
}

TEST_CASE("the abort flag releases a rank waiting for others, well before its deadline") {
  auto root = startRoot();
  std::atomic<bool> abortFlag{false};
  Outcome waiting;
  const auto start = Clock::now();
  {
    RankThreads threads;
    threads.join(waiting, root->id(), 0, 2, kGenerousMs, &abortFlag);
    const bool joined = root->waitForJoined(1, Deadline::afterMs(kGenerousMs));
    abortFlag.store(true);
    REQUIRE(joined);
  }
  CHECK(Clock::now() - start < std::chrono::milliseconds(kGenerousMs));
  CHECK(waiting.result == kAbortedResult);
  CHECK_THAT(waiting.message, Contains("aborted"));
  // The root noticed that the rank left (else rank 0 would be there twice) and still serves.
  const std::vector<Outcome> after = formAll(root->id(), 2);
  for (const Outcome& o : after) {
    INFO(o.message);
    CHECK(o.ok());
  }
}

TEST_CASE("the abort flag releases a rank whose root is not listening") {
  // A port nobody listens on: bind one, learn it, close it.
  SocketAddress nowhere;
  {
    Fd probe = listenOn(SocketAddress::parse("127.0.0.1", 0));
    nowhere = localAddress(probe.get());
  }
  UniqueId id;
  id.root = nowhere;
  std::atomic<bool> abortFlag{false};
  Outcome waiting;
  const auto start = Clock::now();
  {
    RankThreads threads;
    threads.join(waiting, id, 0, 2, kGenerousMs, &abortFlag);
    abortFlag.store(true);
  }
  CHECK(Clock::now() - start < std::chrono::milliseconds(kGenerousMs));
  CHECK(waiting.result == kAbortedResult);
}

TEST_CASE("a bad rank or nranks is weftInvalidArgument before anything is sent") {
  auto root = startRoot();
  for (auto [rank, nranks] : {std::pair{0, 0}, {2, 2}, {-1, 3}}) {
    try {
      Bootstrap::connect(root->id(), rank, nranks, Deadline::afterMs(kGenerousMs));
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.result() == weftInvalidArgument);
    }
  }
  CHECK(root->joined().empty());
}
