// The public API with ranks as threads of one process: weftCommInitAll, weftCommInitRank from
// several threads, groups driving several ranks from one thread, host streams, non-blocking
// init, deadlines and abort.
#include <atomic>
#include <chrono>
#include <numeric>

#include "unit/api/api_support.hpp"

using namespace weft::testing;

namespace {

// Every collective once on float sum, checked against plain arithmetic. Runs on rank threads:
// each call that waits for the peers is made before the check of its result.
void everyCollective(weftComm_t comm, int n, int r) {
  const size_t c = 1000;
  std::vector<float> in(n * c), out(n * c);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(r * 10 + i % 7);
  const weftResult_t allReduce =
      weftAllReduce(in.data(), out.data(), c, weftFloat, weftSum, comm, nullptr);
  RANK_REQUIRE(allReduce == weftSuccess);
  for (size_t i = 0; i < c; ++i) {
    float want = 0;
    for (int q = 0; q < n; ++q) want += float(q * 10 + i % 7);
    RANK_REQUIRE(out[i] == want);
  }
  const int root = n - 1;
  const weftResult_t broadcast =
      weftBroadcast(in.data(), out.data(), c, weftFloat, root, comm, nullptr);
  RANK_REQUIRE(broadcast == weftSuccess);
  for (size_t i = 0; i < c; ++i) RANK_REQUIRE(out[i] == float(root * 10 + i % 7));
  const weftResult_t allGather = weftAllGather(in.data(), out.data(), c, weftFloat, comm, nullptr);
  RANK_REQUIRE(allGather == weftSuccess);
  for (int q = 0; q < n; ++q)
    for (size_t i = 0; i < c; ++i) RANK_REQUIRE(out[q * c + i] == float(q * 10 + i % 7));
  const weftResult_t reduceScatter =
      weftReduceScatter(in.data(), out.data(), c, weftFloat, weftMax, comm, nullptr);
  RANK_REQUIRE(reduceScatter == weftSuccess);
  for (size_t i = 0; i < c; ++i) RANK_REQUIRE(out[i] == float((n - 1) * 10 + (r * c + i) % 7));
  const weftResult_t alltoAll = weftAlltoAll(in.data(), out.data(), c, weftFloat, comm, nullptr);
  RANK_REQUIRE(alltoAll == weftSuccess);
  for (int q = 0; q < n; ++q)
    for (size_t i = 0; i < c; ++i) RANK_REQUIRE(out[q * c + i] == float(q * 10 + (r * c + i) % 7));
  std::fill(out.begin(), out.end(), -1.0f);
  const weftResult_t reduce =
      weftReduce(in.data(), out.data(), c, weftFloat, weftMin, 0, comm, nullptr);
  RANK_REQUIRE(reduce == weftSuccess);
  if (r == 0)
    for (size_t i = 0; i < c; ++i) RANK_REQUIRE(out[i] == float(i % 7));
  const weftResult_t gather = weftGather(in.data(), out.data(), c, weftFloat, 0, comm, nullptr);
  RANK_REQUIRE(gather == weftSuccess);
  if (r == 0)
    for (int q = 0; q < n; ++q)
      for (size_t i = 0; i < c; ++i) RANK_REQUIRE(out[q * c + i] == float(q * 10 + i % 7));
  const weftResult_t scatter = weftScatter(in.data(), out.data(), c, weftFloat, 0, comm, nullptr);
  RANK_REQUIRE(scatter == weftSuccess);
  for (size_t i = 0; i < c; ++i) RANK_REQUIRE(out[i] == float((r * c + i) % 7));
  // A ring of sends and receives inside a group.
  std::vector<float> got(c);
  RANK_REQUIRE(weftGroupStart() == weftSuccess);
  RANK_REQUIRE(weftSend(in.data(), c, weftFloat, (r + 1) % n, comm, nullptr) == weftSuccess);
  RANK_REQUIRE(weftRecv(got.data(), c, weftFloat, (r + n - 1) % n, comm, nullptr) == weftSuccess);
  const weftResult_t groupEnd = weftGroupEnd();
  RANK_REQUIRE(groupEnd == weftSuccess);
  for (size_t i = 0; i < c; ++i) RANK_REQUIRE(got[i] == float(((r + n - 1) % n) * 10 + i % 7));
}

weftConfig_t configWithTimeout(int ms) {
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.timeoutMs = ms;
  return config;
}

}  // namespace

TEST_CASE("weftCommInitAll with 4 threads runs every collective correctly") {
  ThreadComms comms(4);
  onEveryRank(4, [&](int r) {
    int n = 0, rank = -1;
    RANK_REQUIRE(weftCommCount(comms[r], &n) == weftSuccess);
    RANK_REQUIRE(weftCommUserRank(comms[r], &rank) == weftSuccess);
    RANK_REQUIRE(n == 4);
    RANK_REQUIRE(rank == r);
    everyCollective(comms[r], 4, r);
  });
}

TEST_CASE("weftCommInitRank from 3 threads forms a communicator and runs every collective") {
  weftUniqueId id;
  REQUIRE(weftGetUniqueId(&id) == weftSuccess);
  std::vector<weftComm_t> comms(3);
  onEveryRank(3, [&](int r) {
    const weftResult_t init = weftCommInitRank(&comms[r], 3, id, r);
    RANK_REQUIRE(init == weftSuccess);
    everyCollective(comms[r], 3, r);
    const weftResult_t finalize = weftCommFinalize(comms[r]);
    RANK_REQUIRE(finalize == weftSuccess);
    const weftResult_t destroy = weftCommDestroy(comms[r]);
    RANK_REQUIRE(destroy == weftSuccess);
  });
}

TEST_CASE("one thread drives every rank inside a group, as with NCCL") {
  const int n = 3;
  ThreadComms comms(n);
  std::vector<std::vector<int64_t>> data(n, std::vector<int64_t>(4096));
  for (int r = 0; r < n; ++r) std::iota(data[r].begin(), data[r].end(), int64_t(r) << 32);
  REQUIRE(weftGroupStart() == weftSuccess);
  for (int r = 0; r < n; ++r)
    REQUIRE(weftAllReduce(data[r].data(), data[r].data(), data[r].size(), weftInt64, weftSum,
                          comms[r], nullptr) == weftSuccess);
  REQUIRE(weftGroupEnd() == weftSuccess);
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < 4096; ++i)
      REQUIRE(data[r][i] == (int64_t(0 + 1 + 2) << 32) + int64_t(3 * i));
}

// NCCL's "single process, single thread, multiple devices" example: weftCommInitAll, one
// thread drives every rank through a group, then finalizes or destroys the communicators one
// after another. Finalize is collective; a barrier per communicator would wait for the ranks
// the thread has not reached yet, until the deadline (weftTimeout after WEFT_TIMEOUT_MS).
TEST_CASE("one thread destroys the communicators of weftCommInitAll one after another") {
  const int n = 3;
  for (const bool finalizeFirst : {false, true}) {
    CAPTURE(finalizeFirst);
    std::vector<weftComm_t> comms(n);
    REQUIRE(weftCommInitAll(comms.data(), n, nullptr) == weftSuccess);
    std::vector<std::vector<int32_t>> data(n, std::vector<int32_t>(1000));
    for (int r = 0; r < n; ++r) std::iota(data[r].begin(), data[r].end(), r * 1000);
    REQUIRE(weftGroupStart() == weftSuccess);
    for (int r = 0; r < n; ++r)
      REQUIRE(weftAllReduce(data[r].data(), data[r].data(), data[r].size(), weftInt32, weftSum,
                            comms[r], nullptr) == weftSuccess);
    REQUIRE(weftGroupEnd() == weftSuccess);
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < 1000; ++i) REQUIRE(data[r][i] == 3000 + 3 * i);
    if (finalizeFirst) {
      for (int r = 0; r < n; ++r) CHECK(weftCommFinalize(comms[r]) == weftSuccess);
      // Finalized: operations are refused, not left to hang.
      int32_t v = 1;
      CHECK(weftAllReduce(&v, &v, 1, weftInt32, weftSum, comms[0], nullptr) == weftInvalidUsage);
    }
    for (int r = 0; r < n; ++r) {
      CAPTURE(r);
      CHECK(weftCommDestroy(comms[r]) == weftSuccess);
    }
  }
}

TEST_CASE("weftCommInitAll communicators: one aborted, the others destroyed from one thread") {
  std::vector<weftComm_t> comms(3);
  REQUIRE(weftCommInitAll(comms.data(), 3, nullptr) == weftSuccess);
  CHECK(weftCommAbort(comms[1]) == weftSuccess);
  CHECK(weftCommDestroy(comms[0]) == weftSuccess);
  CHECK(weftCommDestroy(comms[2]) == weftSuccess);
}

TEST_CASE("host streams run operations in order and report completion") {
  const int n = 2, iterations = 10;
  ThreadComms comms(n);
  onEveryRank(n, [&](int r) {
    weftStream_t stream;
    RANK_REQUIRE(weftStreamCreate(&stream) == weftSuccess);
    std::vector<std::vector<int32_t>> bufs(iterations, std::vector<int32_t>(10000, r + 1));
    // Each operation feeds the next: in-place allreduce of the previous result.
    std::vector<int32_t> x(10000, r + 1);
    for (int i = 0; i < iterations; ++i) {
      const weftResult_t allReduce =
          weftAllReduce(x.data(), x.data(), x.size(), weftInt32, weftSum, comms[r], stream);
      RANK_REQUIRE(allReduce == weftSuccess);
    }
    const weftResult_t q = weftStreamQuery(stream);
    RANK_REQUIRE((q == weftSuccess || q == weftInProgress));
    const weftResult_t synchronize = weftStreamSynchronize(stream);
    RANK_REQUIRE(synchronize == weftSuccess);
    RANK_REQUIRE(weftStreamQuery(stream) == weftSuccess);
    // (1+2) * 2^9 after ten doublings of the sum of two ranks
    for (int32_t v : x) RANK_REQUIRE(v == 3 * 512);
    const weftResult_t destroy = weftStreamDestroy(stream);
    RANK_REQUIRE(destroy == weftSuccess);
  });
}

// More calls than a stream queues (its enqueue then waits for the worker): every output
// written, in order. The rank threads only call; the results are checked here afterwards
// (Catch's assertions are not for several threads at once).
TEST_CASE("host streams take more collectives than their queue holds") {
  const int n = 3, calls = 2500;
  ThreadComms comms(n);
  std::vector<std::vector<int32_t>> inputs(n, std::vector<int32_t>(calls * 2));
  std::vector<std::vector<int32_t>> outputs(n, std::vector<int32_t>(calls * 2, -1));
  std::vector<int32_t> chains(n, 1);
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      weftStream_t stream;
      if (weftStreamCreate(&stream) != weftSuccess) {
        errors[r] = "weftStreamCreate failed";
        return;
      }
      for (int i = 0; i < calls && errors[r].empty(); ++i) {
        inputs[r][2 * i] = r * 1000 + i;
        inputs[r][2 * i + 1] = 1;
        if (weftAllReduce(&inputs[r][2 * i], &outputs[r][2 * i], 2, weftInt32, weftSum, comms[r],
                          stream) != weftSuccess ||
            // a chain of in-place calls, each on the result of the one before: times n each
            weftAllReduce(&chains[r], &chains[r], 1, weftInt32, weftSum, comms[r], stream) !=
                weftSuccess)
          errors[r] = "weftAllReduce failed at call " + std::to_string(i);
      }
      if (weftStreamSynchronize(stream) != weftSuccess)
        errors[r] += "; weftStreamSynchronize failed";
      if (weftStreamDestroy(stream) != weftSuccess) errors[r] += "; weftStreamDestroy failed";
    });
  for (std::thread& t : threads) t.join();
  uint32_t chain = 1;  // n^calls, wrapped as weft's integer sums are
  for (int i = 0; i < calls; ++i) chain *= n;
  for (int r = 0; r < n; ++r) {
    CAPTURE(r);
    REQUIRE(errors[r].empty());
    for (int i = 0; i < calls; ++i) {
      CAPTURE(i);
      // the sum over ranks q of q * 1000 + i, and of 1
      REQUIRE(outputs[r][2 * i] == 1000 * (n * (n - 1) / 2) + n * i);
      REQUIRE(outputs[r][2 * i + 1] == n);
    }
    CHECK(static_cast<uint32_t>(chains[r]) == chain);
  }
}

TEST_CASE("a group with streams: one thread, one stream per rank") {
  const int n = 3;
  ThreadComms comms(n);
  std::vector<weftStream_t> streams(n);
  for (auto& s : streams) REQUIRE(weftStreamCreate(&s) == weftSuccess);
  std::vector<std::vector<float>> x(n, std::vector<float>(100000, 1.0f));
  REQUIRE(weftGroupStart() == weftSuccess);
  for (int r = 0; r < n; ++r)
    REQUIRE(weftAllReduce(x[r].data(), x[r].data(), x[r].size(), weftFloat, weftSum, comms[r],
                          streams[r]) == weftSuccess);
  REQUIRE(weftGroupEnd() == weftSuccess);
  for (int r = 0; r < n; ++r) {
    REQUIRE(weftStreamSynchronize(streams[r]) == weftSuccess);
    REQUIRE(x[r].front() == float(n));
    REQUIRE(x[r].back() == float(n));
    REQUIRE(weftStreamDestroy(streams[r]) == weftSuccess);
  }
}

TEST_CASE("non-blocking init returns weftInProgress and completes by polling") {
  weftUniqueId id;
  REQUIRE(weftGetUniqueId(&id) == weftSuccess);
  std::vector<weftComm_t> comms(2);
  onEveryRank(2, [&](int r) {
    weftConfig_t config = WEFT_CONFIG_INITIALIZER;
    config.blocking = 0;
    RANK_REQUIRE(weftCommInitRankConfig(&comms[r], 2, id, r, &config) == weftInProgress);
    weftResult_t state = weftInProgress;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (state == weftInProgress && std::chrono::steady_clock::now() < deadline) {
      RANK_REQUIRE(weftCommGetAsyncError(comms[r], &state) == weftSuccess);
      std::this_thread::yield();
    }
    RANK_REQUIRE(state == weftSuccess);
    everyCollective(comms[r], 2, r);
    const weftResult_t destroy = weftCommDestroy(comms[r]);
    RANK_REQUIRE(destroy == weftSuccess);
  });
}

// readyComm: a call on a handle whose non-blocking init has not finished, or has failed, is an
// error that says so, never a use of a communicator that does not exist.
TEST_CASE("collectives during and after a failed non-blocking init return errors that say so") {
  weftUniqueId id;
  REQUIRE(weftGetUniqueId(&id) == weftSuccess);
  weftComm_t comm;
  weftConfig_t config = configWithTimeout(1500);
  config.blocking = 0;
  // Rank 1 never joins: the init stays in progress until its deadline, then fails.
  REQUIRE(weftCommInitRankConfig(&comm, 2, id, 0, &config) == weftInProgress);
  float x = 1.0f;
  CHECK(weftAllReduce(&x, &x, 1, weftFloat, weftSum, comm, nullptr) == weftInvalidUsage);
  CHECK_THAT(lastError(comm), Catch::Contains("still initializing"));
  weftResult_t state = weftInProgress;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (state == weftInProgress && std::chrono::steady_clock::now() < deadline) {
    REQUIRE(weftCommGetAsyncError(comm, &state) == weftSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(state != weftInProgress);
  REQUIRE(state != weftSuccess);
  CHECK(weftAllReduce(&x, &x, 1, weftFloat, weftSum, comm, nullptr) == state);
  CHECK_THAT(lastError(comm), Catch::Contains("failed to initialize"));
  CHECK(weftCommAbort(comm) == weftSuccess);
}

TEST_CASE("a peer that never arrives is a timeout naming it, and the communicator stays failed") {
  weftUniqueId id;
  REQUIRE(weftGetUniqueId(&id) == weftSuccess);
  std::vector<weftComm_t> comms(2);
  onEveryRank(2, [&](int r) {
    weftConfig_t config = configWithTimeout(1500);
    const weftResult_t init = weftCommInitRankConfig(&comms[r], 2, id, r, &config);
    RANK_REQUIRE(init == weftSuccess);
  });
  std::vector<float> x(1 << 16, 1.0f);
  // Rank 1 never calls: rank 0 must give up at its deadline and say who it waited for.
  CHECK(weftAllReduce(x.data(), x.data(), x.size(), weftFloat, weftSum, comms[0], nullptr) ==
        weftTimeout);
  const std::string message = lastError(comms[0]);
  CHECK_THAT(message, Catch::Contains("timed out after 1500 ms"));
  CHECK_THAT(message, Catch::Contains("rank(s) 1"));
  CHECK_THAT(message, Catch::Contains("AllReduce"));
  weftResult_t async;
  REQUIRE(weftCommGetAsyncError(comms[0], &async) == weftSuccess);
  CHECK(async == weftTimeout);
  CHECK(weftAllReduce(x.data(), x.data(), 4, weftFloat, weftSum, comms[0], nullptr) ==
        weftTimeout);
  CHECK_THAT(lastError(comms[0]), Catch::Contains("failed earlier"));
  // A failed communicator is torn down locally (no barrier that could hang).
  CHECK(weftCommDestroy(comms[0]) == weftSuccess);
  CHECK(weftCommAbort(comms[1]) == weftSuccess);
}

TEST_CASE("an operation on a stream that fails reaches weftStreamSynchronize and the comm") {
  weftUniqueId id;
  REQUIRE(weftGetUniqueId(&id) == weftSuccess);
  std::vector<weftComm_t> comms(2);
  onEveryRank(2, [&](int r) {
    weftConfig_t config = configWithTimeout(1000);
    const weftResult_t init = weftCommInitRankConfig(&comms[r], 2, id, r, &config);
    RANK_REQUIRE(init == weftSuccess);
  });
  weftStream_t stream;
  REQUIRE(weftStreamCreate(&stream) == weftSuccess);
  int32_t v = 1;
  REQUIRE(weftAllReduce(&v, &v, 1, weftInt32, weftSum, comms[0], stream) == weftSuccess);
  CHECK(weftStreamSynchronize(stream) == weftTimeout);
  CHECK_THAT(lastError(nullptr), Catch::Contains("timed out"));
  CHECK(weftStreamSynchronize(stream) == weftSuccess);  // the error was handed out once
  weftResult_t async;
  REQUIRE(weftCommGetAsyncError(comms[0], &async) == weftSuccess);
  CHECK(async == weftTimeout);
  CHECK_THAT(lastError(comms[0]), Catch::Contains("timed out"));
  REQUIRE(weftStreamDestroy(stream) == weftSuccess);
  CHECK(weftCommDestroy(comms[0]) == weftSuccess);
  CHECK(weftCommAbort(comms[1]) == weftSuccess);
}

TEST_CASE("weftCommAbort from another thread releases an operation waiting for a peer") {
  weftUniqueId id;
  REQUIRE(weftGetUniqueId(&id) == weftSuccess);
  std::vector<weftComm_t> comms(2);
  onEveryRank(2, [&](int r) {
    weftConfig_t config = configWithTimeout(600000);  // only the abort can end the wait
    const weftResult_t init = weftCommInitRankConfig(&comms[r], 2, id, r, &config);
    RANK_REQUIRE(init == weftSuccess);
  });
  std::atomic<int> result{-1};
  std::thread waiter([&] {
    std::vector<float> x(1024, 1.0f);
    result = weftAllReduce(x.data(), x.data(), x.size(), weftFloat, weftSum, comms[0], nullptr);
  });
  // Give the waiter time to start waiting; the test is valid whichever comes first.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const weftResult_t aborted = weftCommAbort(comms[0]);
  waiter.join();  // before any check: a failed REQUIRE must not destroy a joinable thread
  REQUIRE(aborted == weftSuccess);
  // Aborted while waiting: the abort result; aborted before the call: not a live communicator.
  CHECK((result == weftInvalidUsage || result == weftInvalidArgument));
  CHECK(weftCommAbort(comms[1]) == weftSuccess);
}
