#include "lib/stream/host_stream.hpp"

#include <cxxabi.h>

#include <exception>

namespace weft {

HostStream::HostStream() : ring_(new Slot[kSlots]), worker_([this] { run(); }) {}

HostStream::~HostStream() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  workCv_.notify_all();
  worker_.join();
}

std::unique_lock<std::mutex> HostStream::claimSlot() {
  std::unique_lock claim(producerMutex_);
  const uint64_t tail = tail_.load(std::memory_order_relaxed);
  if (tail - head_.load(std::memory_order_acquire) >= kSlots) {
    // tail_ cannot move while this producer holds producerMutex_, so the worker can tell
    // when the wait is over (taskEnded).
    std::unique_lock lock(mutex_);
    producersWaiting_.fetch_add(1, std::memory_order_seq_cst);
    spaceCv_.wait(lock,
                  [&] { return tail - head_.load(std::memory_order_seq_cst) <= kMaxQueued / 2; });
    producersWaiting_.fetch_sub(1, std::memory_order_relaxed);
  }
  return claim;
}

void HostStream::commit(std::unique_lock<std::mutex>& claim) {
  tail_.store(tail_.load(std::memory_order_relaxed) + 1, std::memory_order_seq_cst);
  claim.unlock();
  if (workerAsleep_.load(std::memory_order_seq_cst)) {
    std::lock_guard lock(mutex_);
    workCv_.notify_one();
  }
}

std::optional<Error> HostStream::synchronize() {
  const uint64_t target = tail_.load(std::memory_order_seq_cst);
  bool idleRunner = false;
  if (head_.load(std::memory_order_acquire) < target &&
      running_.compare_exchange_strong(idleRunner, true, std::memory_order_acquire)) {
    runTasks(target);
    releaseRunner();
  }
  std::unique_lock lock(mutex_, std::defer_lock);
  if (head_.load(std::memory_order_seq_cst) < target) {
    lock.lock();
    syncWaiters_.fetch_add(1, std::memory_order_seq_cst);
    for (;;) {
      // The worker resets wakeSyncAt_ when it wakes the waiters; those still waiting set it
      // again.
      if (wakeSyncAt_.load(std::memory_order_relaxed) > target)
        wakeSyncAt_.store(target, std::memory_order_seq_cst);
      if (head_.load(std::memory_order_seq_cst) >= target) break;
      idleCv_.wait(lock);
    }
    syncWaiters_.fetch_sub(1, std::memory_order_relaxed);
  }
  // A task that failed set failed_ before its head_ moved past it.
  if (!failed_.load(std::memory_order_acquire)) return std::nullopt;
  if (!lock.owns_lock()) lock.lock();
  failed_.store(false, std::memory_order_relaxed);
  std::optional<Error> error;
  error.swap(firstError_);
  return error;
}

bool HostStream::idle() const {
  // head_ first: it only grows and never passes tail_, so if it equals the tail_ read after
  // it, nothing was queued or running at that moment.
  const uint64_t head = head_.load(std::memory_order_acquire);
  return tail_.load(std::memory_order_acquire) == head;
}

void HostStream::taskEnded(uint64_t head) {
  head_.store(head, std::memory_order_seq_cst);
  const bool producerWaits = producersWaiting_.load(std::memory_order_seq_cst) > 0 &&
                             tail_.load(std::memory_order_acquire) - head <= kMaxQueued / 2;
  const bool syncWaits = syncWaiters_.load(std::memory_order_seq_cst) > 0 &&
                         wakeSyncAt_.load(std::memory_order_seq_cst) <= head;
  if (!producerWaits && !syncWaits) return;
  std::lock_guard lock(mutex_);
  if (producerWaits) spaceCv_.notify_all();
  if (syncWaits) {
    wakeSyncAt_.store(UINT64_MAX, std::memory_order_relaxed);
    idleCv_.notify_all();
  }
}

void HostStream::runTasks(uint64_t end) {
  for (uint64_t head = head_.load(std::memory_order_relaxed); head < end; ++head) {
    StreamTask& task = slot(head);
    std::optional<Error> failed;
    try {
      task();
    } catch (const Error& e) {
      failed = e;
    } catch (const std::exception& e) {
      failed = Error(weftInternalError, e.what());
    } catch (const abi::__forced_unwind&) {
      throw;  // thread cancellation must go on unwinding
    } catch (...) {
      // Anything else would leave this thread holding the runner's token (or, on the worker,
      // end the process) with the task's record in place.
      failed = Error(weftInternalError,
                     "a task on the stream threw something that is not a "
                     "std::exception");
    }
    task.reset();
    if (failed) {
      std::lock_guard lock(mutex_);
      if (!firstError_) firstError_ = std::move(failed);
      failed_.store(true, std::memory_order_release);
    }
    taskEnded(head + 1);
  }
}

bool HostStream::workReady() const {
  return tail_.load(std::memory_order_seq_cst) != head_.load(std::memory_order_seq_cst) &&
         !running_.load(std::memory_order_seq_cst);
}

void HostStream::releaseRunner() {
  running_.store(false, std::memory_order_seq_cst);
  if (tail_.load(std::memory_order_seq_cst) != head_.load(std::memory_order_relaxed) &&
      workerAsleep_.load(std::memory_order_seq_cst)) {
    std::lock_guard lock(mutex_);
    workCv_.notify_one();
  }
}

void HostStream::run() {
  for (;;) {
    if (!workReady()) {
      std::unique_lock lock(mutex_);
      workerAsleep_.store(true, std::memory_order_seq_cst);
      bool ready = false;
      while (!(ready = workReady()) && !stopping_) workCv_.wait(lock);
      workerAsleep_.store(false, std::memory_order_relaxed);
      // Stopping: nobody synchronizes a stream that is being destroyed, so nothing else runs
      // its tasks, and not ready means none is left.
      if (!ready) return;
    }
    // A caller in synchronize may have taken the tasks (and runs them, then wakes this thread
    // if more have come).
    bool idleRunner = false;
    if (!running_.compare_exchange_strong(idleRunner, true, std::memory_order_acquire)) continue;
    runTasks(tail_.load(std::memory_order_acquire));
    releaseRunner();
  }
}

}  // namespace weft
