// A host stream: an ordered queue of tasks run by one worker thread, the host counterpart of a
// CUDA stream. Tasks report failure by throwing weft::Error; the stream keeps the first error
// until synchronize() hands it out.
//
// The queue is a ring of task records, filled by callers (one at a time, under a producers'
// lock that the worker never takes) and emptied by the runner, which sees new tasks through a
// counter: a queued call costs no allocation and no lock shared with the worker. The runner is
// the worker or a caller in synchronize, whichever holds the runner's token. Each side sleeps
// on a condition variable only when it has nothing to do, and the other side takes the lock to
// wake it only when it is asleep.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "lib/base/error.hpp"
#include "lib/stream/stream_task.hpp"

namespace weft {

class HostStream {
 public:
  HostStream();
  ~HostStream();  // finishes queued tasks, then stops the worker
  HostStream(const HostStream&) = delete;
  HostStream& operator=(const HostStream&) = delete;

  // At most kMaxQueued tasks wait to run: beyond that, enqueue waits until the worker has run
  // half of them (as a CUDA launch waits once its stream's queue is full), so a caller that
  // issues calls faster than they run holds a bounded amount of memory, reused and in cache.
  // The wait ends because every task ends: collectives observe their deadline.
  static constexpr size_t kMaxQueued = 1024;
  template <class F>
  void enqueue(F&& task) {
    std::unique_lock<std::mutex> claim = claimSlot();
    slot(tail_.load(std::memory_order_relaxed)).emplace(std::forward<F>(task));
    commit(claim);
  }
  // Waits until every task enqueued so far has run. Returns the first error since the last
  // synchronize (and forgets it), or nullopt. When the worker is not running a task, the
  // caller runs them itself: the worker, woken by enqueue, may not have been given a core yet
  // (a framework's call is an enqueue and a synchronize: both wake-ups cost more than a small
  // collective).
  std::optional<Error> synchronize();
  // True when nothing is queued or running.
  bool idle() const;

 private:
  // The running task's record and kMaxQueued waiting ones: the runner empties a record only
  // after its task has run.
  static constexpr uint64_t kSlots = kMaxQueued + 1;
  struct alignas(64) Slot {
    StreamTask task;
  };
  StreamTask& slot(uint64_t seq) { return ring_[seq % kSlots].task; }
  // Takes the producers' lock and waits for a free record.
  std::unique_lock<std::mutex> claimSlot();
  // Makes the record filled under `claim` visible to the worker and wakes it if it sleeps.
  void commit(std::unique_lock<std::mutex>& claim);
  void run();
  // Whether the worker has tasks to run that nobody runs.
  bool workReady() const;
  // Runs the tasks from head_ up to `end`; the caller holds running_.
  void runTasks(uint64_t end);
  // Gives running_ up, and wakes the worker if it slept because this thread ran tasks and
  // more have come.
  void releaseRunner();
  void taskEnded(uint64_t head);

  std::unique_ptr<Slot[]> ring_;
  // Tasks enqueued (written under producerMutex_), and tasks run and emptied (by the runner):
  // each on its own line, written by one side and read by the other.
  alignas(64) std::atomic<uint64_t> tail_{0};
  alignas(64) std::atomic<uint64_t> head_{0};
  alignas(64) std::mutex producerMutex_;
  // Taken by the thread that runs tasks: the worker, or a caller in synchronize.
  std::atomic<bool> running_{false};
  // Sleeping and waking: each side announces that it sleeps (sequentially consistent), then
  // looks once more at the counter it waits for; the other side moves its counter, then looks
  // at the announcement, and notifies under mutex_.
  std::atomic<bool> workerAsleep_{false};
  std::atomic<int> producersWaiting_{0};          // in claimSlot, for room in a full ring
  std::atomic<int> syncWaiters_{0};               // in synchronize
  std::atomic<uint64_t> wakeSyncAt_{UINT64_MAX};  // the smallest head_ a synchronize waits for
  mutable std::mutex mutex_;
  std::condition_variable workCv_, idleCv_, spaceCv_;
  bool stopping_ = false;            // under mutex_
  std::optional<Error> firstError_;  // under mutex_
  std::atomic<bool> failed_{false};  // firstError_ is set (a synchronize without an error
                                     // takes no lock once its tasks have run)
  std::thread worker_;
};

}  // namespace weft
