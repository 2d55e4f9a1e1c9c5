// The executor: runs schedules over a Transport. A step starts when the steps it depends on are
// done; sends and receives are posted without blocking and completed by transport progress.
// Several schedules (a group of operations, possibly on several communicators) run at once.
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "algorithms/reduce/reduce.hpp"
#include "algorithms/schedule.hpp"
#include "lib/base/deadline.hpp"
#include "lib/base/describer.hpp"
#include "transports/transport.hpp"

namespace weft {

struct Buffers {
  const void* send = nullptr;
  void* recv = nullptr;
  void* scratch = nullptr;  // at least schedule->scratchBytes
};

// One schedule with its buffers.
struct Work {
  const Schedule* schedule = nullptr;
  Buffers buffers;
  ReduceFn reduce = nullptr;  // for RecvReduce and Reduce steps
  uint32_t elemSize = 1;
  uint64_t tagBase = 0;       // OR-ed with each step's message index to form the transport tag
  Describer name;             // "AllReduce(...) #12": names the operation in error messages
};

struct ExecutionContext {
  int rank = 0;
  Deadline deadline = Deadline::never();
  int64_t timeoutMs = 0;                   // for messages only
  const std::atomic<bool>* abortFlag = nullptr;
  // Stop when the transport reports any peer gone (see Transport::lostPeer). Off for exchanges
  // among survivors that expect some peer to be gone (shrink).
  bool stopOnLostPeer = true;
};

class Execution {
 public:
  enum class Progress { Idle, Moved, Done };

  Execution(Transport& transport, std::vector<Work> works, ExecutionContext context);
  ~Execution();
  Execution(const Execution&) = delete;
  Execution& operator=(const Execution&) = delete;

  // Starts what can start and collects what finished. Throws Error on failure, timeout or
  // abort, after withdrawing everything it had posted.
  Progress advance();
  // Every step finished and the transport owes no peer anything for them (Transport::flush).
  bool done() const { return flushed_; }
  // Sleeps until the transport has news or maxUs passes (Transport::waitForActivity).
  bool waitForActivity(int64_t maxUs) { return transport_.waitForActivity(maxUs); }

 private:
  struct Location {
    uint32_t work;
    StepId step;
  };
  Location locate(uint32_t global) const;
  uint8_t* address(const Work& work, BufferRef ref, uint64_t bytes) const;
  void start(uint32_t global);
  void finish(uint32_t global);
  void complete(uint32_t global);
  [[noreturn]] void failWith(weftResult_t result, const std::string& why);
  std::string pendingSummary() const;
  void withdraw();

  Transport& transport_;
  std::vector<Work> works_;
  ExecutionContext context_;
  std::vector<uint32_t> firstStep_;  // global index of each work's step 0
  uint32_t total_ = 0, completed_ = 0;
  bool flushed_ = false;
  std::vector<uint32_t> waitingOn_;  // unfinished dependencies per step
  std::unique_ptr<Request[]> requests_;
  std::vector<uint32_t> ready_, inflight_;
};

// Drives executions to completion from this thread, interleaved, waiting politely between
// rounds that make no progress. Rethrows the first failure (the others are withdrawn).
void runToCompletion(std::span<Execution* const> executions);

}  // namespace weft
