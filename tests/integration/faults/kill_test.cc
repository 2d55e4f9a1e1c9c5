// A rank whose process is killed while the others wait on it: every survivor's collective
// returns weftRemoteError (or weftTimeout) within the deadline, naming a rank that is gone (the
// victim; or, over UCX, a survivor that already failed and left, when that is the peer this
// rank was waiting for); nothing hangs, and the survivors can still destroy their
// communicators. With WEFT_TEST_KILL_INSIDE set, the victim dies inside the collective.
//
//   weft-test-kill NRANKS BYTES   (the parent hosts the rendezvous and starts the ranks as new
//                                  processes: fork then exec, since forking a process that
//                                  runs threads, the rendezvous root's among them, is unsafe)
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "include/weft.h"
#include "tests/integration/faults/victim_job.hpp"

namespace {

constexpr int kVictim = 1;
constexpr int kTimeoutMs = 60000;
// WEFT_TEST_KILL_INSIDE set: the victim dies inside the allreduce instead of before it. It
// enters the call (and publishes what its peers copy from it) and a thread of it kills the
// process kInsideMs later; the others start only once it is dead. Peers that copy from its
// memory through CMA then find the process gone instead of waiting for it. (Should the victim
// take longer than kInsideMs to publish, its peers wait for it instead: the same error.)
constexpr int kInsideMs = 300;

int rankMain(const weftUniqueId& id, int n, int rank, size_t bytes) {
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.timeoutMs = kTimeoutMs;
  weftComm_t comm;
  if (weftCommInitRankConfig(&comm, n, id, rank, &config) != weftSuccess) {
    std::fprintf(stderr, "rank %d: init: %s\n", rank, weftGetLastError(nullptr));
    return 2;
  }
  // Everyone finishes joining first (a rank's init may return while the last bootstrap messages
  // are still on their way to the others).
  int32_t ready = 1;
  if (weftAllReduce(&ready, &ready, 1, weftInt32, weftSum, comm, nullptr) != weftSuccess) {
    std::fprintf(stderr, "rank %d: first allreduce: %s\n", rank, weftGetLastError(comm));
    return 2;
  }
  weft::faults::markPast(rank);
  const bool inside = std::getenv("WEFT_TEST_KILL_INSIDE") != nullptr;
  if (rank == kVictim) {
    if (!weft::faults::othersPast(n, rank)) {
      std::fprintf(stderr, "rank %d: the others did not finish the first allreduce\n", rank);
      return 2;
    }
    if (!inside) kill(getpid(), SIGKILL);
    weft::faults::leavePid(rank);
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(kInsideMs));
      kill(getpid(), SIGKILL);
    }).detach();
  } else if (inside && !weft::faults::waitUntilDead(kVictim)) {
    std::fprintf(stderr, "rank %d: rank %d did not die\n", rank, kVictim);
    return 2;
  }
  std::vector<float> x(bytes / sizeof(float), 1.0f);
  const auto start = std::chrono::steady_clock::now();
  const weftResult_t result =
      weftAllReduce(x.data(), x.data(), x.size(), weftFloat, weftSum, comm, nullptr);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string message = weftGetLastError(comm);
  std::printf("rank %d: %s after %.2f s: %s\n", rank, weftGetErrorString(result), seconds,
              message.c_str());
  bool named = false;
  for (int r = 0; r < n; ++r)
    for (const char* how : {"from rank ", "to rank "})
      if (r != rank && message.find(how + std::to_string(r)) != std::string::npos) named = true;
  // "rank 1 (pid 123) exited", or "ranks 0, 1 (pids 122, 123) exited" when a survivor that
  // failed first is gone too.
  std::smatch gone;
  if (std::regex_search(message, gone,
                        std::regex("ranks? ([0-9, ]+?)(?: \\(pids? [0-9, ]+\\))? exited"))) {
    const std::string list = ", " + gone[1].str() + ",";
    named |= list.find(fmt::format(" {},", kVictim)) != std::string::npos;
  }
  named |= message.find("rank(s) " + std::to_string(kVictim)) != std::string::npos;
  const bool ok = (result == weftRemoteError || result == weftTimeout) && named &&
                  seconds * 1000 < kTimeoutMs + 10000;
  // A failed communicator is released locally: this must not hang either.
  if (weftCommDestroy(comm) != weftSuccess) {
    std::fprintf(stderr, "rank %d: destroy: %s\n", rank, weftGetLastError(nullptr));
    std::fflush(stdout);
    return 3;
  }
  std::fflush(stdout);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return weft::faults::runVictimJob(argc, argv, kVictim, rankMain,
                                    "every survivor reported the dead rank");
}
