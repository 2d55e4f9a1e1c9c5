// How a thread waits for other ranks: spin briefly, then yield the core, then sleep in short
// naps, so that 4 or 8 ranks on 2 cores all make progress. Where the transport can sleep until
// data arrives, the executor does that after spinning() instead (algorithms/executor.cc).
#pragma once

#include <sched.h>
#include <time.h>

#include <chrono>
#include <cstdint>

namespace weft {

class Backoff {
 public:
  // Call after an iteration that made no progress.
  void idle() {
    if (idle_++ == 0) idleSince_ = std::chrono::steady_clock::now();
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
  // True for the first kSpinBeforeSleep of a wait. A caller that can sleep until its data
  // arrives (Transport::waitForActivity) does so after it instead of yielding on. Measured across
  // namespaced hosts (perf/README.md): waking a sleeping rank costs ~40 us on the build VM, so
  // sleeping after a few rounds made an 8 B allreduce between 2 hosts 46 us against 7 us, and a
  // 64 MiB hierarchical allreduce in 16 KiB chunks (a message every ~100 us) 0.78 of the link
  // against 0.90. Spinning (with yields) for 1 ms first gives both; yielding for much longer,
  // as before the sleep existed, only took the core from the rank with work.
  bool spinning() const {
    return idle_ == 0 || std::chrono::steady_clock::now() - idleSince_ < kSpinBeforeSleep;
  }

 private:
  // Polls before the first yield. Each poll of a UCX worker with a tcp lane is a system call or
  // more, so with ranks sharing cores 64 of them kept the core from the rank whose message had
  // arrived: an 8 B allreduce over 4 namespaced hosts x 2 ranks (2 cores) took 159-172 us with
  // 64, 88-100 us with 0-4 (Open MPI: 95-102 us); with a core per rank it made no difference.
  static constexpr uint32_t kSpins = 4;
  static constexpr std::chrono::microseconds kSpinBeforeSleep{1000};
  static constexpr uint32_t kYields = 20000;
  static constexpr long kNapNs = 50000;
  uint32_t idle_ = 0;
  std::chrono::steady_clock::time_point idleSince_;
};

}  // namespace weft
