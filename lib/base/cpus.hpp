// The CPUs the calling thread may run on (its affinity mask), in increasing order: what weftrun
// binds ranks to, what calibration counts as the host's cores, and what tests that bind ranks
// work from.
#pragma once

#include <sched.h>

#include <vector>

namespace weft {

inline std::vector<int> allowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

}  // namespace weft
