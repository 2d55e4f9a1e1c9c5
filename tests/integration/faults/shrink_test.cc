// Kill one rank of N during an allreduce loop: every survivor gets an error naming it, shrinks
// the communicator without it, and finishes the loop on the survivors with correct results.
//
//   weft-test-shrink NRANKS BYTES   (the parent hosts the rendezvous and starts the ranks)
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "include/weft.h"
#include "tests/integration/faults/victim_job.hpp"

namespace {

constexpr int kVictim = 2;
constexpr int kIterations = 60;
constexpr int kDeathAt = 20;

int rankMain(const weftUniqueId& id, int n, int rank, size_t bytes) {
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.timeoutMs = 60000;
  weftComm_t comm;
  if (weftCommInitRankConfig(&comm, n, id, rank, &config) != weftSuccess) {
    std::fprintf(stderr, "rank %d: init: %s\n", rank, weftGetLastError(nullptr));
    return 2;
  }
  std::vector<float> x(bytes / sizeof(float));
  int members = n;        // ranks in the communicator now
  int contributors = 0;   // sum of (parent rank + 1) over them
  for (int r = 0; r < n; ++r) contributors += r + 1;
  bool shrunk = false;
  for (int i = 0; i < kIterations; ++i) {
    if (i == kDeathAt) {
      // The victim dies once every survivor has finished the iteration before.
      weft::faults::markPast(rank);
      if (rank == kVictim) {
        if (!weft::faults::othersPast(n, rank)) {
          std::fprintf(stderr, "rank %d: the others did not reach iteration %d\n", rank, i);
          return 2;
        }
        kill(getpid(), SIGKILL);
      }
    }
    std::fill(x.begin(), x.end(), float(rank + 1));
    const auto start = std::chrono::steady_clock::now();
    weftResult_t result =
        weftAllReduce(x.data(), x.data(), x.size(), weftFloat, weftSum, comm, nullptr);
    if (result != weftSuccess) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const std::string why = weftGetLastError(comm);
      std::printf("rank %d: iteration %d: %s after %.3f s: %s\n", rank, i,
                  weftGetErrorString(result), seconds, why.c_str());
      if (shrunk || (result != weftRemoteError && result != weftTimeout) ||
          why.find(std::to_string(kVictim)) == std::string::npos)
        return 1;
      int excluded[] = {kVictim};
      weftComm_t smaller;
      if (weftCommShrink(comm, excluded, 1, &smaller, nullptr, WEFT_SHRINK_DEFAULT) !=
          weftSuccess) {
        std::printf("rank %d: shrink: %s\n", rank, weftGetLastError(nullptr));
        return 1;
      }
      weftCommAbort(comm);  // the old communicator failed: release it locally
      comm = smaller;
      shrunk = true;
      members = n - 1;
      contributors -= kVictim + 1;
      --i;  // redo this iteration on the survivors
      continue;
    }
    if (x.front() != float(contributors) || x.back() != float(contributors)) {
      std::printf("rank %d: iteration %d on %d ranks: got %g, want %d\n", rank, i, members,
                  x.front(), contributors);
      return 1;
    }
  }
  int size = 0;
  weftCommCount(comm, &size);
  std::printf("rank %d: finished %d iterations, %s on %d ranks\n", rank, kIterations,
              shrunk ? "the last ones" : "all", size);
  std::fflush(stdout);
  const bool ok = shrunk && size == n - 1 && weftCommDestroy(comm) == weftSuccess;
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return weft::faults::runVictimJob(argc, argv, kVictim, rankMain,
                                    "the survivors shrank and finished the loop");
}
