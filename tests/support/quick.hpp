// WEFT_TEST_QUICK=1 (the sanitizer builds of scripts/sanitizers.sh): the large test sweeps run
// a representative subset instead of everything, so that instrumented builds finish in CI's
// time: rank counts 1 to 5 (one, primes, a power of two, a non-power of two), and on the
// loopback transport and in the mp sweep between processes a largest count of 5003 elements
// instead of 65537 (still more than one 4096-byte chunk of every datatype; the native sweep on
// thread ranks keeps 65537 but takes one datatype per element size).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace weft::testing {

inline bool quick() {
  const char* v = std::getenv("WEFT_TEST_QUICK");
  return v && std::strcmp(v, "1") == 0;
}

// Whether a rank count belongs to the sweep.
inline bool sweepRanks(int n) { return !quick() || n <= 5; }

// A sweep's count, capped in quick mode.
inline uint64_t sweepCount(uint64_t count) {
  return quick() ? std::min<uint64_t>(count, 5003) : count;
}

}  // namespace weft::testing
