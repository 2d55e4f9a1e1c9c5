#include "transports/shm/flag.hpp"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <optional>

#include "lib/base/error.hpp"

namespace weft {
namespace {

// After spinning, yield at most this many times, then sleep on the futex.
constexpr int kYields = 50;
// What such ranks spin at least, and what a wait without a SpinBudget spins.
constexpr int64_t kFloorSpinNs = 1000;
// A sleeping waiter wakes at least this often to look at the deadline, abort and peers.
constexpr long kNapNs = 10 * 1000 * 1000;

long futex(const std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  // Shared (not PRIVATE) futexes: the word lives in memory mapped by several processes.
  return syscall(SYS_futex, reinterpret_cast<const uint32_t*>(word), op, value, timeout,
                 nullptr, 0);
}

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

void SharedFlag::publish(uint32_t v) {
  value.store(v, std::memory_order_seq_cst);
  if (sleepers.load(std::memory_order_seq_cst) != 0) futex(&value, FUTEX_WAKE, INT_MAX, nullptr);
}

void SharedFlag::wakeSleepers() {
  // The fence orders the earlier store() before the load, as publish()'s sequentially
  // consistent store does: a sleeper either counted itself before it (and is seen here) or
  // reads the new value after it and does not sleep.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleepers.load(std::memory_order_relaxed) != 0) futex(&value, FUTEX_WAKE, INT_MAX, nullptr);
}

std::unique_ptr<SpinBudget> makeSpinBudget(bool oversubscribed) {
  if (oversubscribed) return std::make_unique<SpinBudget>(0, 0, 2, kYields);
  return std::make_unique<SpinBudget>(kFloorSpinNs, 200 * 1000, kYields, kYields);
}

void waitFor(const SharedFlag& flag, uint32_t target, const WaitContext& context, int who,
             const std::atomic<int32_t>* whoCpu, SharedFlag* owed) {
  SpinBudget* budget = context.spin;
  // Ranks that share cores do not spin at all (makeSpinBudget).
  const bool spins = !budget || budget->spins();
  // A first round of spinning (64 pauses: 1 to 4 us, by the CPU) before anything else: most
  // waits of ranks with a core each end in it, and they neither read the clock nor move the
  // budget.
  for (int i = 0; spins && i < 64; ++i) {
    if (reached(flag.load(), target)) return;
    cpuRelax();
  }
  // Not an immediate wait: whoever sleeps on `owed` is woken before this rank spins long,
  // yields or sleeps (its fence costs little by now: the store has long reached the line).
  if (owed) owed->wakeSleepers();
  const bool sameCpu = whoCpu && whoCpu->load(std::memory_order_relaxed) == sched_getcpu();
  // When the spin that failed began: the budget learns how long the whole wait took.
  std::optional<Clock::time_point> spunFrom;
  auto spinFailed = [&] {
    if (budget && spunFrom)
      budget->spinFailed(
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - *spunFrom).count());
  };
  if (spins && !sameCpu) {
    spunFrom = Clock::now();
    const auto spinUntil =
        *spunFrom + std::chrono::nanoseconds(budget ? budget->ns() : kFloorSpinNs);
    do {
      for (int i = 0; i < 64; ++i) {
        if (reached(flag.load(), target)) {
          if (budget) budget->spinWorked();
          return;
        }
        cpuRelax();
      }
    } while (Clock::now() < spinUntil);
  }
  const int yields = budget ? budget->yields() : kYields;
  for (int i = 0; i < yields; ++i) {
    if (reached(flag.load(), target)) {
      if (budget) budget->yieldsWorked();
      spinFailed();
      return;
    }
    sched_yield();
  }
  if (budget && yields > 0) budget->yieldsFailed();
  auto& mutableFlag = const_cast<SharedFlag&>(flag);
  const Deadline deadline = Deadline::afterMs(context.timeoutMs);
  for (;;) {
    if (context.abortFlag && context.abortFlag->load(std::memory_order_relaxed))
      fail(kAbortedResult, "{}: stopped: the communicator was aborted", context.what());
    if (deadline.expired())
      fail(weftTimeout, "{} timed out after {} ms; still waiting for rank(s) {} (shared memory)",
           context.what(), context.timeoutMs, who);
    if (context.checkPeers) context.checkPeers();
    mutableFlag.sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t seen = flag.value.load(std::memory_order_seq_cst);
    if (!reached(seen, target)) {
      const timespec nap{0, kNapNs};
      futex(&flag.value, FUTEX_WAIT, seen, &nap);  // returns at once if the value moved
    }
    mutableFlag.sleepers.fetch_sub(1, std::memory_order_seq_cst);
    if (reached(flag.load(), target)) {
      spinFailed();
      return;
    }
  }
}

}  // namespace weft
