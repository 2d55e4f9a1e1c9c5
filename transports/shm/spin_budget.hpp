// How long a wait on a shared flag spins before it yields, learned from how recent waits ended
// (the idea of glibc's adaptive mutexes). Spinning is the fastest way to see a peer that runs on
// another core; it is the slowest when the peer is waiting for the very core the spinner holds
// (more ranks than free cores, or other work on the machine), because then every wait costs
// the whole budget. A fixed budget cannot serve both: 200 us of spinning made 2-rank
// allreduces take 200 us per call whenever another process took one of the two cores.
//
// The rule: a wait that ended while spinning leaves the budget as it is; one that ended while
// yielding shows the peer answers within `elapsed`, so the budget grows to twice that (up to
// the ceiling); one that had to sleep halves it (down to the floor). Under contention the
// budget falls to the floor within a few waits; on an idle machine it climbs back as soon as
// peers answer quickly again.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace weft {

class SpinBudget {
 public:
  // floorNs <= ceilingNs; the budget starts at the ceiling.
  SpinBudget(int64_t floorNs, int64_t ceilingNs)
      : floor_(std::min(floorNs, ceilingNs)), ceiling_(ceilingNs), ns_(ceilingNs) {}

  int64_t ns() const { return ns_.load(std::memory_order_relaxed); }
  int64_t floorNs() const { return floor_; }
  int64_t ceilingNs() const { return ceiling_; }

  // The flag moved while spinning: the budget was enough.
  void endedSpinning() {}
  // The flag moved while yielding, `elapsedNs` after the wait began.
  void endedYielding(int64_t elapsedNs) {
    const int64_t grown = std::max(ns() * 2, elapsedNs * 2);
    ns_.store(std::clamp(grown, floor_, ceiling_), std::memory_order_relaxed);
  }
  // The wait had to sleep: spinning was wasted.
  void endedSleeping() {
    ns_.store(std::clamp(ns() / 2, floor_, ceiling_), std::memory_order_relaxed);
  }

 private:
  int64_t floor_;
  int64_t ceiling_;
  // Relaxed: a stale read only makes one wait spin a little longer or shorter.
  std::atomic<int64_t> ns_;
};

}  // namespace weft
