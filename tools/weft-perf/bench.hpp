// One rank's part of a sweep: for every size, datatype and operator, verify, warm up and time
// the collective out of place and in place, and combine the numbers over the ranks.
#pragma once

#include <weft.h>

#include <cstdint>
#include <functional>

#include "baseline.hpp"
#include "options.hpp"
#include "report.hpp"

namespace weft::perf {

struct RankSetup {
  weftComm_t comm = nullptr;
  weftStream_t stream = nullptr;  // nullptr: blocking calls (-z 1)
  int rank = 0;                   // -1 before ranks exist (weftCommInitAll)
  int nranks = 1;
  const Baseline* baseline = nullptr;  // --baseline: the peer timed alongside weft
};

// A weft call that failed ends the program: "weft-perf: rank R: <function> failed: <error>:
// <last error>" on stderr, exit status 1. Never returns when result != weftSuccess.
void ensure(const RankSetup& setup, weftResult_t result, const char* function);

// Runs every row. onRow is called on rank 0 only, once per row, as soon as the row is done.
// Returns the wrong elements of every row summed over the ranks (the same on every rank).
uint64_t runSweep(const Options& options, const RankSetup& setup,
                  const std::function<void(const Row&)>& onRow);

}  // namespace weft::perf
