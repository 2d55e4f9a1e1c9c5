// A host stream: an ordered queue of tasks run by one worker thread, the host counterpart of a
// CUDA stream. Tasks report failure by throwing weft::Error; the stream keeps the first error
// until synchronize() hands it out.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "lib/base/error.hpp"

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
  void enqueue(std::function<void()> task);
  // Waits until every task enqueued so far has run. Returns the first error since the last
  // synchronize (and forgets it), or nullopt.
  std::optional<Error> synchronize();
  // True when nothing is queued or running.
  bool idle() const;

 private:
  void run();

  mutable std::mutex mutex_;
  std::condition_variable workCv_, idleCv_, spaceCv_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false, stopping_ = false;
  int producersWaiting_ = 0;  // in enqueue, for room in a full queue
  std::optional<Error> firstError_;
  std::thread worker_;
};

}  // namespace weft
