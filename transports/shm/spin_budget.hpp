// How long a wait on a shared flag spins before it yields, learned from how recent waits ended
// (the idea of glibc's adaptive mutexes). Spinning is the fastest way to see a peer that runs on
// another core, and it keeps the core: a rank that yields on a busy machine can lose its core
// for a whole time slice. It is the slowest when the peer is waiting for the very core the
// spinner holds, because then every wait costs the whole budget: a fixed 200 us spin made
// 2-rank allreduces take 200 us per call whenever another process used one of the two cores.
//
// Two defences. A waiter that sits on the CPU its peer last ran on does not spin at all: that peer
// cannot be running (waitFor's whoCpu). Otherwise the budget adapts: a wait that ended while
// spinning doubles it (up to the ceiling); one that outlasted it, whether it then ended while
// yielding or had to sleep, halves it (down to the floor). A budget that keeps failing falls to
// the floor within a few waits and one that keeps succeeding climbs back as fast.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace weft {

class SpinBudget {
 public:
  // The budget starts at the floor and earns its way up (starting at the ceiling cost the first
  // calls of a job on a busy machine the whole ceiling each). `yields`: how many times a wait
  // that outlasts the spin yields before it sleeps.
  SpinBudget(int64_t floorNs, int64_t ceilingNs, int yields)
      : floor_(std::min(floorNs, ceilingNs)), ceiling_(ceilingNs), yields_(yields), ns_(floor_) {}

  int64_t ns() const { return ns_.load(std::memory_order_relaxed); }
  int64_t floorNs() const { return floor_; }
  int64_t ceilingNs() const { return ceiling_; }
  int yields() const { return yields_; }

  // The flag moved while spinning.
  void spinWorked() { set(ns() * 2); }
  // It did not: the wait went on to yield or sleep.
  void spinFailed() { set(ns() / 2); }

 private:
  void set(int64_t ns) { ns_.store(std::clamp(ns, floor_, ceiling_), std::memory_order_relaxed); }

  int64_t floor_;
  int64_t ceiling_;
  int yields_;
  // Relaxed: a stale read only makes one wait spin a little longer or shorter.
  std::atomic<int64_t> ns_;
};

}  // namespace weft
