// The CPUs the calling thread may run on, in increasing order (sched_getaffinity), for tests
// that bind ranks and work out what each should see.
#pragma once

#include <sched.h>

#include <vector>

namespace weft::testing {

inline std::vector<int> allowedCpus() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mask)) out.push_back(c);
  return out;
}

}  // namespace weft::testing
