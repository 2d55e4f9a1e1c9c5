// WEFT_TEST_QUICK=1 (the sanitizer builds of scripts/sanitizers.sh): the large test sweeps run
// a representative subset (prime, power-of-two and odd rank counts, the largest count) instead
// of everything, so instrumented builds finish in CI's time.
#pragma once

#include <cstdlib>
#include <cstring>

namespace weft::testing {

inline bool quick() {
  const char* v = std::getenv("WEFT_TEST_QUICK");
  return v && std::strcmp(v, "1") == 0;
}

// Whether a rank count belongs to the sweep.
inline bool sweepRanks(int n) {
  if (!quick()) return true;
  return n == 1 || n == 2 || n == 3 || n == 4 || n == 5 || n == 8 || n == 17;
}

}  // namespace weft::testing
