// How a thread waits for other ranks: spin briefly, then yield the core, then sleep in short
// naps, so that 4 or 8 ranks on 2 cores all make progress. Where the transport can sleep until
// data arrives, the executor does that after spinning() instead (algorithms/executor.cc).
#pragma once

#include <sched.h>
#include <time.h>

#include <cstdint>

namespace weft {

class Backoff {
 public:
  // Call after an iteration that made no progress.
  void idle() {
    ++idle_;
    if (idle_ < kSpins) return;
    if (idle_ < kYields) {
      sched_yield();
      return;
    }
    timespec nap{0, kNapNs};
    nanosleep(&nap, nullptr);
  }
  // Call after an iteration that made progress.
  void reset() { idle_ = 0; }
  // True for the first few idle rounds. A caller that can sleep until its data arrives
  // (Transport::waitForActivity) does so after these instead of yielding: measured with 4 ranks
  // on 2 cores (perf/README.md), spinning longer only takes the core from the rank with work.
  bool spinning() const { return idle_ < kSpinsBeforeSleep; }

 private:
  static constexpr uint32_t kSpins = 64;
  static constexpr uint32_t kSpinsBeforeSleep = 8;
  static constexpr uint32_t kYields = 20000;
  static constexpr long kNapNs = 50000;
  uint32_t idle_ = 0;
};

}  // namespace weft
