// Sequence flags in shared memory, and waiting on them without burning a core another rank
// needs: spin briefly, then yield, then sleep on a futex, checking the deadline, the abort flag
// and the liveness of peers between naps.
//
// A flag is a 32-bit counter that only grows (modulo 2^32: comparisons are wrap-safe) on its own
// cache line, with a count of sleepers so that a publisher makes the futex system call only
// when someone sleeps on it. Publishing and sleeping pair up as Dekker's protocol (store the
// value, then load the sleepers; add a sleeper, then load the value), both sequentially
// consistent, and FUTEX_WAIT re-checks the value, so no wake-up is lost.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "lib/base/deadline.hpp"
#include "lib/base/describer.hpp"
#include "transports/shm/spin_budget.hpp"

namespace weft {

struct alignas(64) SharedFlag {
  std::atomic<uint32_t> value{0};
  std::atomic<uint32_t> sleepers{0};
  // The rest of the line may carry a small payload published with the value (see payload()).
  uint8_t payload[56];

  uint32_t load() const { return value.load(std::memory_order_acquire); }
  // Makes `v` visible (with everything written before it) and wakes sleepers.
  void publish(uint32_t v);
  // publish() in two halves, for a rank that waits on its peers right after publishing. The
  // store alone does not stall: publish()'s fence waits until this line, which a peer is
  // polling, has come back to this core (up to a tenth of a 2-rank 8 B allreduce). The wake-up must
  // follow before the rank returns or waits long: pass the flag to waitFor as `owed`, then call
  // wakeSleepers().
  void store(uint32_t v) { value.store(v, std::memory_order_release); }
  void wakeSleepers();
};
static_assert(sizeof(SharedFlag) == 64);

// a >= b in sequence space.
inline bool reached(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) >= 0; }

// What a wait must watch besides its flag.
struct WaitContext {
  // Each wait gives up timeoutMs after it started (counted from its first nap, so that waits
  // that end while spinning never read the clock).
  int64_t timeoutMs = 0;
  const std::atomic<bool>* abortFlag = nullptr;
  // Called every few milliseconds while sleeping; throws (e.g. weftRemoteError naming a peer
  // that died) to end the wait. May be empty.
  std::function<void()> checkPeers;
  // Name the wait in timeout and abort messages: "<prefix>: <op>", as "rank 1 of 4:
  // AllReduce(...) #12". Formatted only when a message is made.
  std::string_view prefix;
  Describer op;
  std::string what() const { return std::string(prefix) + ": " + op.str(); }
  // How long to spin and how often to yield before sleeping, adapted by every wait that uses
  // it (spin_budget.hpp). Null: a short spin and a few yields.
  SpinBudget* spin = nullptr;
};

// The spin budget of ranks that have a core each: spin 1 us to 200 us (adaptive), then yield 50
// times, then sleep; a sleeping waiter's peer pays for the wake-up, and two ranks that sleep in
// turn pay it on every call. Ranks that share cores do not spin at all (the rank waited for
// most likely needs this core; even the first round of 64 pauses, 3-4 us on the build
// machine's AMD EPYC, was half of all CPU time in an 8-rank 4 KiB allreduce loop on 2 cores,
// and dropping it took that loop from 20-26 to 9-13 us per call and 4 ranks from 7-20 to
// 4-6 us, 5 alternating runs) and yield 2 to 50 times (adaptive): on an idle machine yielding
// hands the core straight to the rank with work (4 ranks on 2 cores, 4 KiB allreduce: 7 us,
// against 36 us when sleeping at once, both with the spin), on a busy one it can hand it to
// another process for a whole time slice.
std::unique_ptr<SpinBudget> makeSpinBudget(bool oversubscribed);

// Waits until flag.value has reached `target`. Throws weftTimeout (naming `who`, the rank whose
// flag it is), kAbortedResult, or what checkPeers throws. `whoCpu`, when given, is where `who`
// last ran: a waiter on that CPU skips the spin (the rank it waits for needs this very CPU).
// `owed`, when given, is a flag this rank stored without waking its sleepers: they are woken
// before this wait yields or sleeps (they may be the ranks it waits for).
void waitFor(const SharedFlag& flag, uint32_t target, const WaitContext& context, int who,
             const std::atomic<int32_t>* whoCpu = nullptr, SharedFlag* owed = nullptr);

}  // namespace weft
