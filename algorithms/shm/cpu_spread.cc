#include "algorithms/shm/cpu_spread.hpp"

namespace weft {

int ranksOnMyCpu(std::span<const int32_t> rankCpus, int me, int32_t now) {
  int onMine = 0;
  for (int q = 0; q < static_cast<int>(rankCpus.size()); ++q) {
    if (q != me && rankCpus[q] != now) continue;
    if (q > me) return 0;
    ++onMine;
  }
  return onMine;
}

bool crowded(int onMine, int ranks, int cores) {
  if (cores < 1) return false;
  return onMine > (ranks + cores - 1) / cores;
}

int32_t leastCrowdedCpu(std::span<const int32_t> rankCpus, int32_t now, int onMine,
                        std::span<const int32_t> allowed) {
  int32_t best = -1;
  int bestCount = onMine - 1;  // a CPU must have fewer than this to be worth the move
  for (int32_t c : allowed) {
    if (c == now) continue;
    int count = 0;
    for (int32_t cpu : rankCpus) count += cpu == c;
    if (count < bestCount) {
      best = c;
      bestCount = count;
    }
  }
  return best;
}

}  // namespace weft
