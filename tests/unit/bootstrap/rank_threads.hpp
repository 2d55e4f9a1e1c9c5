// Ranks as threads for bootstrap tests. Catch2 assertions stay on the main thread: a rank
// thread records what happened in an Outcome, and RankThreads joins every thread on
// destruction, so a failing check never leaves one running.
#pragma once

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lib/base/error.hpp"
#include "lib/bootstrap/bootstrap.hpp"
#include "lib/bootstrap/root.hpp"

namespace weft::test {

// Deadline for things that must happen: long enough for a loaded machine, short enough that a
// hang fails the test instead of the CI job.
inline constexpr int64_t kGenerousMs = 60000;

struct Outcome {
  std::unique_ptr<Bootstrap> boot;
  weftResult_t result = weftSuccess;
  std::string message;
  std::vector<std::vector<uint8_t>> gathered;
  bool ok() const { return result == weftSuccess; }
};

// Runs `body`, recording an exception in `out` instead of letting it escape the thread.
inline void capture(Outcome& out, const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    out.result = e.result();
    out.message = e.what();
  } catch (const std::exception& e) {
    out.result = weftInternalError;
    out.message = std::string("unexpected exception: ") + e.what();
  }
}

class RankThreads {
 public:
  RankThreads() = default;
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;
  ~RankThreads() { joinAll(); }

  void spawn(std::function<void()> body) { threads_.emplace_back(std::move(body)); }
  // Spawns a thread that joins as `rank` of `nranks` and stores the Bootstrap in `out`.
  void join(Outcome& out, const UniqueId& id, int rank, int nranks,
            int64_t deadlineMs = kGenerousMs, const std::atomic<bool>* abortFlag = nullptr) {
    spawn([&out, id, rank, nranks, deadlineMs, abortFlag] {
      capture(out, [&] {
        out.boot = Bootstrap::connect(id, rank, nranks, Deadline::afterMs(deadlineMs), abortFlag);
      });
    });
  }
  void joinAll() {
    for (std::thread& t : threads_)
      if (t.joinable()) t.join();
    threads_.clear();
  }

 private:
  std::vector<std::thread> threads_;
};

// Forms a communicator of `nranks` thread ranks on `id`; returns one Outcome per rank.
inline std::vector<Outcome> formAll(const UniqueId& id, int nranks) {
  std::vector<Outcome> outcomes(static_cast<size_t>(nranks));
  RankThreads threads;
  for (int r = 0; r < nranks; ++r) threads.join(outcomes[static_cast<size_t>(r)], id, r, nranks);
  threads.joinAll();
  return outcomes;
}

// Reads from `fd` until the peer closes the connection (EOF or an error); false if the deadline
// passes first.
inline bool closedByPeer(int fd, Deadline deadline) {
  uint8_t buf[256];
  while (!deadline.expired()) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, std::min(deadline.remainingMs(), 100)) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0) return true;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return true;
  }
  return false;
}

}  // namespace weft::test
