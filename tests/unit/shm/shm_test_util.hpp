// Helpers for the shm transport tests. Ranks are threads (runThreads, over
// support/thread_oob.hpp) or processes (process_ranks.hpp); each creates the communicator's
// segment through its OutOfBand (makeShmRank) and its own transport over it. Everything here
// throws std::runtime_error on a mismatch so that the rank's runner reports it to the main
// thread (Catch2 assertions are not thread-safe, nor fork-safe).
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lib/base/deadline.hpp"
#include "support/thread_oob.hpp"
#include "transports/shm/segment.hpp"
#include "transports/shm/shm_transport.hpp"
#include "transports/transport.hpp"

namespace weft::test {

// Generous: these tests run on loaded 2-core machines. Nothing asserts on time.
inline constexpr int64_t kTestTimeoutMs = 120000;
inline Deadline testDeadline() {
  return Deadline::afterMs(kTestTimeoutMs);
}

// A segment name no other test (or test process) uses.
inline std::string uniqueSegmentName() {
  static std::atomic<int> counter{0};
  return fmt::format("test{}x{}", getpid(), counter.fetch_add(1));
}

// What one rank holds: the segment, then the transport over it (destroyed first).
struct ShmRank {
  LocalGroup group;
  std::unique_ptr<ShmSegment> segment;
  std::unique_ptr<Transport> transport;
  Transport& t() { return *transport; }
};

inline constexpr uint64_t kTestMailboxBytes = 256 << 10;

// Every rank of `oob` is a local rank. With `threads`, all are threads of this process;
// otherwise the ranks swap their pids first.
inline ShmRank makeShmRank(OutOfBand& oob, const std::string& name, ShmCopy copy, bool threads,
                           uint64_t mailboxBytes = kTestMailboxBytes) {
  ShmRank r;
  const int n = oob.nranks();
  for (int i = 0; i < n; ++i) r.group.ranks.push_back(i);
  r.group.me = oob.rank();
  r.group.oneProcess = threads;
  if (threads) {
    r.group.pids.assign(static_cast<size_t>(n), getpid());
  } else {
    const pid_t mine = getpid();
    const auto* bytes = reinterpret_cast<const uint8_t*>(&mine);
    auto all = oob.allGather(std::span<const uint8_t>(bytes, sizeof mine), testDeadline());
    for (const auto& blob : all) {
      pid_t pid = 0;
      if (blob.size() != sizeof pid) throw std::runtime_error("bad pid blob");
      std::memcpy(&pid, blob.data(), sizeof pid);
      r.group.pids.push_back(pid);
    }
  }
  r.segment = ShmSegment::create(oob, r.group, name, SegmentGeometry::make(n, 4096, mailboxBytes),
                                 testDeadline());
  ShmTransportOptions options;
  options.label = fmt::format("test-r{}", oob.rank());
  options.copy = copy;
  r.transport = createShmTransport(*r.segment, r.group, options);
  return r;
}

// Progresses until every request has finished (in any state). Throws when the deadline passes
// or when `stop` says another rank has failed (it will not answer).
inline void waitFinished(Transport& t, const std::vector<Request*>& reqs, const char* what,
                         const std::function<bool()>& stop = {}, Deadline d = testDeadline()) {
  for (uint64_t spins = 0;; ++spins) {
    bool all = true;
    for (const Request* r : reqs) all = all && r->finished();
    if (all) return;
    if (!t.progress()) std::this_thread::yield();
    if ((spins & 255) == 0) {
      if (d.expired()) throw std::runtime_error(fmt::format("{}: timed out", what));
      if (stop && stop()) throw std::runtime_error(fmt::format("{}: another rank failed", what));
    }
  }
}

inline std::string stateName(uint8_t state) {
  static const char* names[] = {"Idle", "Posted", "Done", "Failed", "Cancelled"};
  return state < 5 ? names[state] : "?";
}

// Waits and requires every request Done.
inline void waitDone(Transport& t, const std::vector<Request*>& reqs, const char* what,
                     const std::function<bool()>& stop = {}) {
  waitFinished(t, reqs, what, stop);
  for (size_t i = 0; i < reqs.size(); ++i) {
    auto state = reqs[i]->state.load(std::memory_order_acquire);
    if (state != Request::kDone) {
      throw std::runtime_error(
          fmt::format("{}: request {} ended {}: {}", what, i, stateName(state), reqs[i]->error));
    }
  }
}

inline void waitDone(Transport& t, std::initializer_list<Request*> reqs, const char* what,
                     const std::function<bool()>& stop = {}) {
  waitDone(t, std::vector<Request*>(reqs), what, stop);
}

// Deterministic content: byte i of a message identified by `seed`.
inline uint8_t patternByte(uint64_t seed, size_t i) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<uint8_t>(x ^ (x >> 17));
}

inline std::vector<uint8_t> patterned(size_t bytes, uint64_t seed) {
  std::vector<uint8_t> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = patternByte(seed, i);
  return v;
}

inline void expectPattern(const std::vector<uint8_t>& v, size_t bytes, uint64_t seed,
                          const std::string& what) {
  for (size_t i = 0; i < bytes; ++i) {
    if (v[i] != patternByte(seed, i)) {
      throw std::runtime_error(fmt::format("{}: byte {} of {} is {:#x}, expected {:#x}", what, i,
                                           bytes, v[i], patternByte(seed, i)));
    }
  }
}

inline void expect(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

// A ping-pong of 8 B (eager) and 1 MiB (large) messages in which a rank with nothing to do
// sleeps in waitForActivity with a limit far past the test's deadline: only the doorbell of
// the peer that publishes lets it finish before the deadline check fails it. Wakes for
// messages, acks of large sends and, with ShmCopy::kMailbox, pull requests and streamed data.
inline void sleepingPingPong(Transport& t, int rank, const std::function<bool()>& stop) {
  const Deadline deadline = testDeadline();
  auto sleepUntil = [&](Request* req, const char* what) {
    for (;;) {
      if (req->finished()) return;
      if (t.progress()) continue;
      expect(t.waitForActivity(kTestTimeoutMs * 1000), "shm cannot wait for activity");
      if (deadline.expired()) throw std::runtime_error(fmt::format("{}: not woken", what));
      if (stop && stop()) throw std::runtime_error("another rank failed");
    }
  };
  const int peer = 1 - rank;
  const std::vector<size_t> sizes = {8, 1 << 20};
  for (size_t s = 0; s < sizes.size(); ++s) {
    for (uint64_t round = 0; round < 4; ++round) {
      const uint64_t tag = s * 16 + round, seed = tag + 7;
      Request send, recv;
      if ((rank == 0) == (round % 2 == 0)) {
        std::vector<uint8_t> out = patterned(sizes[s], seed);
        t.postSend(peer, tag, out.data(), out.size(), &send);
        sleepUntil(&send, "send");
        expect(send.state.load() == Request::kDone, "send did not end Done");
      } else {
        std::vector<uint8_t> in(sizes[s]);
        t.postRecv(peer, tag, in.data(), in.size(), &recv);
        sleepUntil(&recv, "recv");
        expect(recv.state.load() == Request::kDone, "receive did not end Done");
        expectPattern(in, sizes[s], seed, fmt::format("{} bytes woken", sizes[s]));
      }
    }
  }
}

// The end of every test rank: nobody sends any more, then close within the test deadline.
inline void barrierAndClose(Transport& t, OutOfBand& oob) {
  oob.barrier(testDeadline());
  t.close(testDeadline());
}

inline std::string joinErrors(const std::vector<std::string>& errors) {
  std::string all;
  for (size_t r = 0; r < errors.size(); ++r) {
    if (!errors[r].empty()) all += fmt::format("rank {}: {}\n", r, errors[r]);
  }
  return all;
}

using Stop = std::function<bool()>;
using RankFn = std::function<void(int rank, OutOfBand& oob, Transport& t, const Stop& stop)>;

// Runs fn on n rank threads, each with its own transport over one segment; returns the errors.
inline std::string runThreads(int n, ShmCopy copy, const RankFn& fn,
                              uint64_t mailboxBytes = kTestMailboxBytes) {
  const std::string name = uniqueSegmentName();
  ThreadOobGroup group(n);
  const Stop stop = [&group] { return group.aborted(); };
  auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
    ShmRank r = makeShmRank(oob, name, copy, /*threads=*/true, mailboxBytes);
    fn(rank, oob, r.t(), stop);
  });
  return joinErrors(errors);
}

}  // namespace weft::test
