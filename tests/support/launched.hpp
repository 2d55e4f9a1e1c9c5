// The communicator of a test program that weftrun launched: weftCommInitFromEnv, then the
// rank's place in it.
#pragma once

#include <cstdio>

#include "include/weft.h"

namespace weft::testing {

struct Launched {
  weftComm_t comm = nullptr;
  int rank = 0;
  int n = 0;
};

// False (having said why on stderr) if the communicator could not be made.
inline bool joinFromEnv(Launched& launched) {
  if (weftCommInitFromEnv(&launched.comm, nullptr) != weftSuccess) {
    std::fprintf(stderr, "weftCommInitFromEnv: %s\n", weftGetLastError(nullptr));
    return false;
  }
  weftCommUserRank(launched.comm, &launched.rank);
  weftCommCount(launched.comm, &launched.n);
  return true;
}

}  // namespace weft::testing
