// Internal to lib/bootstrap: the state a Root handle shares with its thread, and the thread's
// body, which serves rounds until its rounds are done, its lifetime ends or it is stopped.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "lib/bootstrap/root.hpp"

namespace weft {

// Shared by the Root handle and its thread (which outlives a detached handle).
struct RootState {
  UniqueId id;
  RootOptions options;
  Fd listener;
  Fd wake;  // eventfd: stop() interrupts the thread's poll
  std::atomic<bool> stopRequested{false};

  mutable std::mutex mutex;
  mutable std::condition_variable changed;
  bool running = true;             // guarded by mutex
  int roundsServed = 0;            // guarded by mutex
  std::vector<JoinedRank> joined;  // guarded by mutex
};

// The root thread's body; never throws (failures are logged), and marks the state not running
// when it returns.
void serveRoot(const std::shared_ptr<RootState>& state);

}  // namespace weft
