// ProcessGroupWeft: torch.distributed's backend "weft" (torch 1.13: a c10d::ProcessGroup).
//
// Rendezvous: rank 0 of the group makes a weft unique id and puts it in the group's store (the
// PrefixStore torch hands every backend); the others get it; every rank then joins with
// weftCommInitRankConfig. After that, weft's own bootstrap and transports do all the work:
// torch's store is not used again.
//
// Every operation is enqueued on the group's weft host stream and returns at once with a
// WorkWeft -- except that one of up to 1 MiB is first held, and run in the waiting thread when
// a wait for it is the next thing that happens (torch's blocking calls; see launch). Works (and
// their futures, which DDP chains on) complete in the order they were issued, once a
// synchronization of the stream has seen them done: the thread that waits for a work synchronizes
// the stream itself; works whose future was asked for, and works nobody waits for (after a grace
// time), are completed by the group's completion thread. Operations that gather into or scatter
// from lists of tensors go through one flat buffer, copied out before the work completes.
#pragma once

#include <weft.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

namespace weft_torch {

class ProcessGroupWeft;

class WorkWeft : public c10d::Work {
 public:
  WorkWeft(const c10::intrusive_ptr<c10d::ProcessGroup>& group, c10d::OpType type,
           std::vector<at::Tensor> outputs);

  std::vector<at::Tensor> result() override { return outputs_; }
  // The future completes on the group's completion thread (DDP chains its callbacks on it).
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  // Without a timeout, the waiting thread completes the work itself (it synchronizes the
  // stream), one thread hand-off less than waiting for the completion thread.
  bool wait(std::chrono::milliseconds timeout) override;
  bool isCompleted() override;

  // Runs `after`, then completes the future and the work, with `error` (set when the work was
  // drained) or what `after` threw. Called once.
  void complete();

  uint64_t sequence = 0;  // issue order on the group's stream; 0: not issued yet
  std::chrono::steady_clock::time_point issuedAt;
  std::exception_ptr error;           // the outcome of the synchronization that drained it
  std::function<void()> after;        // copies out of scratch buffers, operator clean-up
  std::vector<at::Tensor> keepAlive;  // what the enqueued calls read and write

 private:
  // Weak: a work may outlive its group. (The base type: ProcessGroupWeft is incomplete here.)
  c10::weak_intrusive_ptr<c10d::ProcessGroup> group_;
  c10::intrusive_ptr<ProcessGroupWeft> group() const;
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

class ProcessGroupWeft : public c10d::ProcessGroup {
 public:
  // Collective over the group's ranks; throws c10::Error with weft's message when joining fails.
  ProcessGroupWeft(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                   std::chrono::milliseconds timeout);
  ~ProcessGroupWeft() override;

  // What torch.distributed.Backend.register_backend calls: (store, rank, size, timeout).
  static c10::intrusive_ptr<c10d::ProcessGroup> create(const c10::intrusive_ptr<c10d::Store>& store,
                                                       int rank, int size,
                                                       const std::chrono::duration<float>& timeout);

  const std::string getBackendName() const override { return "weft"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplitSizes,
                                               std::vector<int64_t>& inputSplitSizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // Sends and receives are issued in groups (weftGroupStart/weftGroupEnd), so that exchanges in
  // any order cannot deadlock on the group's one stream (weft runs a communicator's operations
  // one at a time, and a large send needs its receive): consecutive ones are held until
  // something needs them issued -- this process waiting for, polling or asking the future of any
  // weft work (of any group), another operation on this group, or the group's end -- and
  // torch.distributed.batch_isend_irecv's are issued together at its end. Never on a timer, so
  // what is grouped does not depend on timing. (A process that blocks outside weft, holding an
  // isend nobody waits for, holds it back: wait on it or use batch_isend_irecv.)
  void startCoalescing() override;
  void endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>& reqs) override;

  weftComm_t comm() const { return comm_; }

  // Completes every work issued up to `work` (and maybe more), in issue order: synchronizes the
  // stream unless someone else is already doing so. `wait`: block until that is done; else
  // return at once when the stream is still busy.
  void drain(const WorkWeft& work, bool wait);
  // Asks the completion thread to complete pending works now rather than after its grace time.
  void hurry();
  // Issues the sends and receives waiting to be grouped (not inside batch_isend_irecv), and the
  // held operation unless it is `keep`'s.
  void flushPointToPoint(const WorkWeft* keep = nullptr);
  // The held operation, if any, on the stream.
  void issueHeld();
  // Runs `work`'s operation in this thread and completes it, when it is the one held and the
  // group has nothing else in flight and is the process's only weft group (so that blocking
  // here cannot hold back another group's operation a peer needs); else issues it on the
  // stream. True when it ran here.
  bool runHeldInline(const WorkWeft& work);
  // flushPointToPoint on every live group of this process: before it blocks in a wait (`keep`:
  // the work it waits for, which may run inline).
  static void flushEveryGroup(const WorkWeft* keep = nullptr);

 private:
  // Returns the work of the weft calls `issue` makes on the stream it is given (under the
  // group's lock, so that issue order is completion order). Up to kInlineBytes, the operation
  // is held rather than issued: if the next thing that happens to the group is a wait for this
  // work (torch's blocking calls), the waiting thread runs it on the NULL stream, sparing two
  // thread hand-offs (on a busy 2-core machine, 8-byte allreduces took ~270 us through the
  // stream, ~4 us inline); anything else issues it on the stream first.
  c10::intrusive_ptr<c10d::Work> launch(c10d::OpType type, std::vector<at::Tensor> outputs,
                                        std::vector<at::Tensor> keepAlive,
                                        std::function<void(weftStream_t)> issue,
                                        std::function<void()> after = {});
  // `issue` on stream_; a refusal becomes the work's error. mutex_ held.
  void issueOnStreamLocked(const c10::intrusive_ptr<WorkWeft>& work,
                           const std::function<void(weftStream_t)>& issue);
  void issueHeldLocked();  // the held operation, if any, on the stream. mutex_ held.
  // A weft call's result; throws c10::Error with weft's message when it failed.
  void check(weftResult_t result, const char* function) const;
  void completionLoop();
  // Synchronizes the stream and completes the works issued up to now. Caller holds drainMutex_.
  void drainLocked();
  // Completes drained works in order, up to `until` (all of them when null). drainMutex_ held.
  void finishCompleting(const WorkWeft* until);

  struct PointToPoint {
    bool isSend;
    at::Tensor tensor;
    int peer;
    c10::intrusive_ptr<WorkWeft> work;
  };
  c10::intrusive_ptr<c10d::Work> pointToPoint(bool isSend, std::vector<at::Tensor>& tensors,
                                              int peer);
  // Issues `ops` as one group on the stream; their works join pending_ (failed ones, with the
  // error, when weft refuses them). mutex_ held.
  void issueGroupLocked(std::vector<PointToPoint>& ops);

  static std::mutex& liveGroupsMutex();
  static std::set<ProcessGroupWeft*>& liveGroups();  // liveGroupsMutex()

  weftComm_t comm_ = nullptr;
  weftStream_t stream_ = nullptr;

  // One drain at a time, so that works complete in issue order. Recursive: a future's callback
  // may wait for another work (completed then from the same thread, still in order).
  std::recursive_mutex drainMutex_;
  std::deque<c10::intrusive_ptr<WorkWeft>> completing_;  // drained, being completed; drainMutex_
  std::mutex mutex_;
  std::condition_variable pendingChanged_;
  bool hurry_ = false;  // a future or a timed wait needs the pending works completed now
  std::deque<c10::intrusive_ptr<WorkWeft>> pending_;  // issued, not yet completed
  uint64_t issued_ = 0;
  bool stopping_ = false;
  bool coalescing_ = false;             // inside batch_isend_irecv
  std::vector<PointToPoint> deferred_;  // sends and receives not yet issued
  // An operation launched but not yet issued (see launch). Never together with deferred_.
  struct Held {
    c10::intrusive_ptr<WorkWeft> work;
    std::function<void(weftStream_t)> issue;
  };
  std::optional<Held> held_;
  static constexpr size_t kInlineBytes = size_t{1} << 20;
  std::thread completer_;
};

}  // namespace weft_torch
