#include "lib/stream/host_stream.hpp"

#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using weft::HostStream;

namespace {

// Holds the stream's worker inside a task until released.
struct Gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool entered = false, open = false;
  void pass() {
    std::unique_lock lock(mutex);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
  }
  void waitEntered() {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return entered; });
  }
  void release() {
    std::lock_guard lock(mutex);
    open = true;
    cv.notify_all();
  }
};

}  // namespace

TEST_CASE("a host stream runs its tasks in order and reports the first error once") {
  HostStream stream;
  std::vector<int> ran;
  for (int i = 0; i < 3000; ++i) stream.enqueue([&ran, i] { ran.push_back(i); });
  stream.enqueue([] { throw weft::Error(weftRemoteError, "first"); });
  stream.enqueue([] { throw weft::Error(weftTimeout, "second"); });
  stream.enqueue([&ran] { ran.push_back(-1); });
  const std::optional<weft::Error> error = stream.synchronize();
  REQUIRE(error);
  CHECK(error->result() == weftRemoteError);
  CHECK_FALSE(stream.synchronize());
  REQUIRE(ran.size() == 3001);
  for (int i = 0; i < 3000; ++i) REQUIRE(ran[i] == i);
  CHECK(ran.back() == -1);
  CHECK(stream.idle());
}

TEST_CASE("enqueue on a full host stream waits until the worker has run half its queue") {
  HostStream stream;
  Gate gate;
  std::atomic<int> ran{0};
  stream.enqueue([&] { gate.pass(); });
  gate.waitEntered();  // the worker holds the first task: the queue is empty now
  const int total = static_cast<int>(HostStream::kMaxQueued) + 10;
  std::atomic<int> enqueued{0};
  std::thread producer([&] {
    for (int i = 0; i < total; ++i) {
      stream.enqueue([&] { ran.fetch_add(1); });
      enqueued.fetch_add(1);
    }
  });
  // The producer fills the queue, then waits: however long it is given, it cannot get past
  // kMaxQueued tasks while the worker is held. (CHECK, not REQUIRE, until the worker is
  // released and the producer joined: a failure must not leave them blocked.)
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (enqueued.load() < static_cast<int>(HostStream::kMaxQueued) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(enqueued.load() == static_cast<int>(HostStream::kMaxQueued));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(enqueued.load() == static_cast<int>(HostStream::kMaxQueued));
  CHECK(ran.load() == 0);
  gate.release();
  producer.join();
  CHECK_FALSE(stream.synchronize());
  CHECK(ran.load() == total);
}

TEST_CASE("a host stream runs callables of any size and releases their captures once run") {
  HostStream stream;
  auto token = std::make_shared<int>(0);
  std::array<int, 100> big{};  // 400 bytes: more than a task record holds in place
  big[99] = 7;
  int sum = 0;
  {
    auto small = [token, &sum] { sum += 1; };
    auto large = [token, big, &sum] { sum += big[99]; };
    static_assert(weft::StreamTask::kFitsInline<decltype(small)>);
    static_assert(!weft::StreamTask::kFitsInline<decltype(large)>);
    for (int i = 0; i < 2000; ++i) {  // around the ring, twice
      stream.enqueue(small);
      stream.enqueue(large);
    }
  }
  CHECK_FALSE(stream.synchronize());
  CHECK(sum == 2000 * 8);
  CHECK(token.use_count() == 1);
}

TEST_CASE("a host stream keeps each caller's order with several callers and synchronizers") {
  HostStream stream;
  constexpr int kCallers = 4, kTasks = 3000;
  // Written by whichever thread runs the tasks (the worker or a caller in synchronize), one at
  // a time.
  std::vector<std::vector<int>> ran(kCallers);
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c)
    callers.emplace_back([&, c] {
      for (int i = 0; i < kTasks; ++i) {
        stream.enqueue([&ran, c, i] { ran[c].push_back(i); });
        if (i % 500 == 0) (void)stream.synchronize();  // waits while the others keep queueing
      }
    });
  for (std::thread& t : callers) t.join();
  CHECK_FALSE(stream.synchronize());
  CHECK(stream.idle());
  for (int c = 0; c < kCallers; ++c) {
    REQUIRE(ran[c].size() == kTasks);
    for (int i = 0; i < kTasks; ++i) REQUIRE(ran[c][i] == i);
  }
}

TEST_CASE("destroying a host stream runs what it still holds") {
  std::atomic<int> ran{0};
  Gate gate;
  {
    HostStream stream;
    stream.enqueue([&] { gate.pass(); });
    for (int i = 0; i < 100; ++i) stream.enqueue([&] { ran.fetch_add(1); });
    gate.waitEntered();
    gate.release();
  }
  CHECK(ran.load() == 100);
}

TEST_CASE("a host stream's worker runs tasks without synchronize after synchronize ran some") {
  // Each synchronize here races the worker that enqueue woke for the task; whichever loses
  // must carry on. The last task is never synchronized: only the worker can run it.
  HostStream stream;
  for (int i = 0; i < 20000; ++i) {
    stream.enqueue([] {});
    REQUIRE_FALSE(stream.synchronize());
  }
  std::promise<void> ran;
  std::future<void> done = ran.get_future();
  stream.enqueue([&ran] { ran.set_value(); });
  CHECK(done.wait_for(std::chrono::seconds(120)) == std::future_status::ready);
  CHECK_FALSE(stream.synchronize());
}

TEST_CASE("a task that throws something else than a std::exception fails, and the stream goes on") {
  HostStream stream;
  for (int round = 0; round < 200; ++round) {  // run by the worker or by synchronize
    int ran = 0;
    stream.enqueue([] { throw 42; });
    stream.enqueue([&ran] { ++ran; });
    const std::optional<weft::Error> error = stream.synchronize();
    REQUIRE(error);
    CHECK(error->result() == weftInternalError);
    CHECK(ran == 1);
  }
  CHECK(stream.idle());
}
