#include "algorithms/shm/cma_cost.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>

namespace weft {
namespace {

double seconds(std::chrono::steady_clock::time_point from) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count();
}

}  // namespace

double cmaCostRatio(size_t bytes, int reps) {
  if (bytes == 0 || reps <= 0) return 0;
  std::unique_ptr<uint8_t[]> from(new uint8_t[bytes]), to(new uint8_t[bytes]);
  std::memset(from.get(), 1, bytes);
  std::memset(to.get(), 2, bytes);
  const pid_t self = getpid();
  double copy = 1e9, cma = 1e9;
  for (int r = 0; r < reps; ++r) {
    auto start = std::chrono::steady_clock::now();
    std::memcpy(to.get(), from.get(), bytes);
    // Keeps the copy from being dropped: its result is read.
    if (to[bytes - 1] != 1) return 0;
    copy = std::min(copy, seconds(start));
    iovec local{to.get(), bytes}, far{from.get(), bytes};
    start = std::chrono::steady_clock::now();
    const ssize_t got = process_vm_readv(self, &local, 1, &far, 1, 0);
    if (got != static_cast<ssize_t>(bytes)) return 0;
    cma = std::min(cma, seconds(start));
  }
  return copy > 0 ? cma / copy : 0;
}

double agreedCmaCostRatio(std::vector<double> ratios) {
  if (ratios.empty()) return 0;
  std::sort(ratios.begin(), ratios.end());
  const size_t m = ratios.size() / 2;
  return ratios.size() % 2 ? ratios[m] : (ratios[m - 1] + ratios[m]) / 2;
}

bool cmaPreferred(Collective c, int ranks, double costRatio, uint64_t blockBytes) {
  if (c == Collective::Scatter) return true;
  if (costRatio <= 0 || costRatio > kCmaCheapRatio) return false;
  // The largest output one rank receives (a block from every rank: allgather, alltoall, a
  // gather's root), on every rank.
  const uint64_t n = static_cast<uint64_t>(ranks);
  const bool blockFromEach =
      c == Collective::AllGather || c == Collective::AlltoAll || c == Collective::Gather;
  const uint64_t hostOutput = blockBytes * (blockFromEach ? n : 1) * n;
  switch (c) {
    case Collective::AllGather:
    case Collective::AlltoAll:
    case Collective::Gather: return hostOutput <= kCmaMaxHostOutputBytes;
    case Collective::Broadcast: return ranks == 2 && hostOutput <= kCmaMaxHostOutputBytes;
    case Collective::AllReduce:
      if (ranks == 2) return hostOutput <= kCmaMaxHostOutputBytes;
      return ranks <= kCmaAllReduceMaxRanks && blockBytes >= kCmaAllReduceFromBytes &&
             hostOutput <= kCmaAllReduceMaxHostOutputBytes;
    default: return false;
  }
}

}  // namespace weft
