// How a thread waits for other ranks: spin briefly, then yield the core, then sleep in short
// naps, so that 4 or 8 ranks on 2 cores all make progress.
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

 private:
  static constexpr uint32_t kSpins = 64;
  static constexpr uint32_t kYields = 20000;
  static constexpr long kNapNs = 50000;
  uint32_t idle_ = 0;
};

}  // namespace weft
