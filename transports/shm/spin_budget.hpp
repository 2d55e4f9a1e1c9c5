// How long a wait on a shared flag spins before it yields, learned from how recent waits ended
// (the idea of glibc's adaptive mutexes). Spinning is the fastest way to see a peer that runs on
// another core, and it keeps the core: a rank that yields on a busy machine can lose its core
// for a whole time slice. It is the slowest when the peer is waiting for the very core the
// spinner holds, because then every wait costs the whole budget: a fixed 200 us spin made
// 2-rank allreduces take 200 us per call whenever another process used one of the two cores.
//
// Two defences. A waiter that sits on the CPU its peer last ran on does not spin at all: that peer
// cannot be running (waitFor's whoCpu). Otherwise the budget adapts: a wait that ended while
// spinning doubles it (up to the ceiling). One that outlasted it and then ended while yielding
// or asleep sets it from how long the whole wait took: to twice that where the ceiling covers
// it (the next such wait ends while spinning, with no wake-up to pay), else to half the budget
// (down to the floor). Waits for a peer that does not run (another process has its core) last
// whole time slices, so a budget that keeps failing falls to the floor within a few waits, and
// one that keeps succeeding climbs back as fast. The number of
// yields after the spin adapts the same way (doubled when the flag moves while yielding, halved
// when the wait had to sleep) where its bounds differ: for ranks that share cores.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace weft {

class SpinBudget {
 public:
  // The budget starts at the floor and earns its way up (starting at the ceiling cost the first
  // calls of a job on a busy machine the whole ceiling each). How many times a wait that
  // outlasts the spin yields before it sleeps adapts the same way between minYields and
  // maxYields, starting at the most.
  SpinBudget(int64_t floorNs, int64_t ceilingNs, int minYields, int maxYields)
      : floor_(std::min(floorNs, ceilingNs)),
        ceiling_(ceilingNs),
        maxYields_(maxYields),
        minYields_(std::min(minYields, maxYields)),
        ns_(floor_),
        yields_(maxYields) {}

  int64_t ns() const { return ns_.load(std::memory_order_relaxed); }
  int64_t floorNs() const { return floor_; }
  int64_t ceilingNs() const { return ceiling_; }
  // A zero ceiling (ranks that share cores): waits do not spin at all, they yield at once.
  bool spins() const { return ceiling_ > 0; }
  int yields() const { return yields_.load(std::memory_order_relaxed); }

  // The flag moved while spinning.
  void spinWorked() { set(ns() * 2); }
  // It did not: the flag moved only `waitedNs` after the spin began, while yielding or asleep.
  // A wait the ceiling covers sets the budget to twice its length, so that the next one like it
  // ends while spinning: a waiter that sleeps costs whoever wakes it a futex wake and itself a
  // wake-up (a 2-rank 1 MiB broadcast, whose root waits for the receiver's copy, took 146 us a
  // call sleeping there and 61 spinning, on a KVM guest). A longer wait halves the budget.
  void spinFailed(int64_t waitedNs) {
    set(waitedNs <= ceiling_ ? std::max(ns(), 2 * waitedNs) : ns() / 2);
  }
  // After the spin, the flag moved while yielding (a peer on this core ran), or only once the
  // wait slept (yielding just handed the core to others: on a busy machine a rank that yields
  // can wait a whole time slice for it back).
  void yieldsWorked() { setYields(std::max(1, yields()) * 2); }
  void yieldsFailed() { setYields(yields() / 2); }

 private:
  void set(int64_t ns) { ns_.store(std::clamp(ns, floor_, ceiling_), std::memory_order_relaxed); }
  void setYields(int n) {
    yields_.store(std::clamp(n, minYields_, maxYields_), std::memory_order_relaxed);
  }

  int64_t floor_;
  int64_t ceiling_;
  int maxYields_;
  int minYields_;
  // Relaxed: a stale read only makes one wait spin or yield a little longer or shorter.
  std::atomic<int64_t> ns_;
  std::atomic<int> yields_;
};

}  // namespace weft
