#include "process_group.hpp"

#include <ATen/core/ivalue.h>

#include <climits>
#include <cstring>

#include "arguments.hpp"
#include "types.hpp"

namespace weft_torch {
namespace {

constexpr const char* kUniqueIdKey = "weft_unique_id";

}  // namespace

// ---- ProcessGroupWeft ------------------------------------------------------------------------

ProcessGroupWeft::ProcessGroupWeft(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                   std::chrono::milliseconds timeout)
    : c10d::ProcessGroup(rank, size) {
  weftUniqueId id;
  if (rank == 0) {
    check(weftGetUniqueId(&id), "weftGetUniqueId");
    store->set(kUniqueIdKey, std::vector<uint8_t>(id.internal, id.internal + sizeof id.internal));
  } else {
    const std::vector<uint8_t> bytes = store->get(kUniqueIdKey);
    TORCH_CHECK(bytes.size() == sizeof id.internal, "weft: the unique id in the store has ",
                bytes.size(), " bytes, expected ", sizeof id.internal);
    std::memcpy(id.internal, bytes.data(), sizeof id.internal);
  }
  weftConfig_t config = WEFT_CONFIG_INITIALIZER;
  config.timeoutMs = static_cast<int>(std::clamp<int64_t>(timeout.count(), 1, INT_MAX));
  config.commName = "torch";
  check(weftCommInitRankConfig(&comm_, size, id, rank, &config), "weftCommInitRankConfig");
  const weftResult_t r = weftStreamCreate(&stream_);
  if (r != weftSuccess) {
    weftCommDestroy(comm_);
    check(r, "weftStreamCreate");
  }
  completer_ = std::thread([this] { completionLoop(); });
  {
    std::lock_guard lock(liveGroupsMutex());
    liveGroups().insert(this);
  }
  init();
}

ProcessGroupWeft::~ProcessGroupWeft() {
  {
    std::lock_guard lock(liveGroupsMutex());
    liveGroups().erase(this);
  }
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  pendingChanged_.notify_all();
  // The last reference may be dropped by a future's callback on the completion thread itself.
  if (completer_.joinable()) {
    if (completer_.get_id() == std::this_thread::get_id())
      completer_.detach();
    else
      completer_.join();
  }
  weftStreamDestroy(stream_);
  // A graceful destroy is a barrier with every rank (bounded by the timeout): ranks leave the
  // shared segment together.
  weftCommDestroy(comm_);
}

c10::intrusive_ptr<c10d::ProcessGroup> ProcessGroupWeft::create(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    const std::chrono::duration<float>& timeout) {
  return c10::make_intrusive<ProcessGroupWeft>(
      store, rank, size, std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
}

void ProcessGroupWeft::check(weftResult_t result, const char* function) const {
  TORCH_CHECK(result == weftSuccess, weftMessage(result, comm_, function));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::launch(c10d::OpType type,
                                                        std::vector<at::Tensor> outputs,
                                                        std::vector<at::Tensor> keepAlive,
                                                        std::function<void(weftStream_t)> issue,
                                                        std::function<void()> after) {
  size_t bytes = 0;
  for (const auto* list : {&outputs, &keepAlive})
    for (const at::Tensor& t : *list)
      if (t.defined()) bytes += t.nbytes();
  auto work = c10::make_intrusive<WorkWeft>(
      c10::intrusive_ptr<c10d::ProcessGroup>::unsafe_reclaim_from_nonowning(this), type,
      std::move(outputs));
  work->keepAlive = std::move(keepAlive);
  work->after = std::move(after);
  std::lock_guard lock(mutex_);
  TORCH_CHECK(!coalescing_,
              "weft: only send and recv may be issued inside "
              "batch_isend_irecv, not ",
              c10d::opTypeToString(type));
  issueGroupLocked(deferred_);  // sends and receives issued before this go first
  issueHeldLocked();
  if (bytes <= kInlineBytes) {
    // Held for a wait that may run it in the waiting thread (see runHeldInline). No wake-up
    // either way: the completion thread issues it on its next round if nothing else does.
    held_ = Held{work, std::move(issue)};
    return work;
  }
  issueOnStreamLocked(work, issue);
  // No wake-up: the waiter completes its own work; the completion thread looks after a grace
  // time, or at once when hurried.
  return work;
}

void ProcessGroupWeft::issueOnStreamLocked(const c10::intrusive_ptr<WorkWeft>& work,
                                           const std::function<void(weftStream_t)>& issue) {
  try {
    issue(stream_);
  } catch (...) {
    work->error = std::current_exception();  // weft refused it: the work fails when drained
  }
  work->sequence = ++issued_;
  work->issuedAt = std::chrono::steady_clock::now();
  pending_.push_back(work);
}

void ProcessGroupWeft::issueHeldLocked() {
  if (!held_) return;
  Held held = std::move(*held_);
  held_.reset();
  issueOnStreamLocked(held.work, held.issue);
}

void ProcessGroupWeft::issueHeld() {
  std::lock_guard lock(mutex_);
  issueHeldLocked();
}

bool ProcessGroupWeft::runHeldInline(const WorkWeft& work) {
  bool alone = false;
  {
    std::lock_guard lock(liveGroupsMutex());
    alone = liveGroups().size() == 1;
  }
  std::unique_lock drainLock(drainMutex_, std::try_to_lock);
  std::unique_lock lock(mutex_);
  if (!held_ || held_->work.get() != &work) return false;
  if (!alone || !drainLock.owns_lock() || !completing_.empty() || !pending_.empty() ||
      !deferred_.empty() || coalescing_) {
    issueHeldLocked();
    return false;
  }
  Held held = std::move(*held_);
  held_.reset();
  held.work->sequence = ++issued_;
  // Under mutex_: no other thread's operation on this group can take weft's turn before it.
  try {
    held.issue(nullptr);  // NULL stream: runs here and returns when done
  } catch (...) {
    held.work->error = std::current_exception();
  }
  lock.unlock();
  held.work->complete();
  return true;
}

void ProcessGroupWeft::hurry() {
  {
    std::lock_guard lock(mutex_);
    hurry_ = true;
  }
  pendingChanged_.notify_one();
}

void ProcessGroupWeft::drain(const WorkWeft& work, bool wait) {
  std::unique_lock drainLock(drainMutex_, std::defer_lock);
  if (wait)
    drainLock.lock();
  else if (!drainLock.try_lock())
    return;
  // Drained already and being completed (a callback of an earlier work waits for it): complete
  // it, and what comes before it, here.
  for (const auto& w : completing_)
    if (w.get() == &work) {
      finishCompleting(&work);
      return;
    }
  {
    std::lock_guard lock(mutex_);
    if (pending_.empty() || pending_.front()->sequence > work.sequence) return;  // completed
  }
  if (!wait && weftStreamQuery(stream_) != weftSuccess) return;  // still running
  drainLocked();
  finishCompleting(&work);
}

void ProcessGroupWeft::drainLocked() {
  uint64_t upTo = 0;
  {
    std::lock_guard lock(mutex_);
    upTo = issued_;
  }
  // Everything issued so far has run once the stream is idle; a failure among it fails the
  // whole batch (after a failure the communicator is unusable: later works fail as well).
  const weftResult_t result = weftStreamSynchronize(stream_);
  std::exception_ptr error;
  if (result != weftSuccess) {
    error = std::make_exception_ptr(
        std::runtime_error(weftMessage(result, comm_, "an operation on the weft stream")));
  } else {
    weftResult_t async = weftSuccess;
    if (weftCommGetAsyncError(comm_, &async) == weftSuccess && async != weftSuccess &&
        async != weftInProgress)
      error = std::make_exception_ptr(
          std::runtime_error(weftMessage(async, comm_, "the communicator")));
  }
  std::lock_guard lock(mutex_);
  while (!pending_.empty() && pending_.front()->sequence <= upTo) {
    if (!pending_.front()->error) pending_.front()->error = error;
    completing_.push_back(std::move(pending_.front()));
    pending_.pop_front();
  }
}

void ProcessGroupWeft::finishCompleting(const WorkWeft* until) {
  while (!completing_.empty()) {
    c10::intrusive_ptr<WorkWeft> work = std::move(completing_.front());
    completing_.pop_front();
    work->complete();
    if (work.get() == until) return;
  }
}

void ProcessGroupWeft::completionLoop() {
  // Works nobody waits for (fire-and-forget, polled, or with futures but not hurried) are
  // completed this long after they were issued. Sends and receives are not issued on a timer:
  // when they go out must not depend on timing (see startCoalescing).
  constexpr auto kGrace = std::chrono::milliseconds(1);
  constexpr auto kIdle = std::chrono::milliseconds(5);
  std::unique_lock lock(mutex_);
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (!deferred_.empty() && !coalescing_ && (hurry_ || stopping_)) issueGroupLocked(deferred_);
    // An operation held for a wait that has not come by this round goes to the stream: so it
    // runs even if this process blocks elsewhere. (Who runs it changes nothing else.)
    issueHeldLocked();
    if (stopping_ && pending_.empty()) return;
    if (pending_.empty()) hurry_ = false;  // nothing left to hurry (waiters drained it)
    if (!pending_.empty() && (hurry_ || stopping_ || now >= pending_.front()->issuedAt + kGrace)) {
      hurry_ = false;
      lock.unlock();
      {
        std::lock_guard drainLock(drainMutex_);
        drainLocked();
        finishCompleting(nullptr);
      }
      lock.lock();
      continue;
    }
    const auto until = pending_.empty() ? now + kIdle : pending_.front()->issuedAt + kGrace;
    pendingChanged_.wait_until(lock, until, [&] { return stopping_ || hurry_; });
  }
}

// ---- collectives -----------------------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::broadcast(std::vector<at::Tensor>& tensors,
                                                           const c10d::BroadcastOptions& opts) {
  const at::Tensor& t = single(tensors, "broadcast");
  const WeftView v = weftView(t, "the broadcast tensor");
  return launch(c10d::OpType::BROADCAST, tensors, {}, [=, this](weftStream_t stream) {
    check(weftBroadcast(data(t), data(t), v.count, v.datatype, static_cast<int>(opts.rootRank),
                        comm_, stream),
          "weftBroadcast");
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allreduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::AllreduceOptions& opts) {
  const at::Tensor& t = single(tensors, "allreduce");
  const WeftView v = weftView(t, "the allreduce tensor");
  const WeftOp op = weftOp(opts.reduceOp, v, comm_);
  std::function<void()> after;
  if (op.created) after = [comm = comm_, o = op.op] { weftRedOpDestroy(o, comm); };
  return launch(
      c10d::OpType::ALLREDUCE, tensors, {},
      [=, this](weftStream_t stream) {
        check(weftAllReduce(data(t), data(t), v.count, v.datatype, op.op, comm_, stream),
              "weftAllReduce");
      },
      std::move(after));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "weft: allreduce_coalesced of no tensors");
  std::vector<at::Tensor> flat;
  for (const at::Tensor& t : tensors) {
    weftView(t, "an allreduce_coalesced tensor");
    TORCH_CHECK(t.scalar_type() == tensors.front().scalar_type(),
                "weft: allreduce_coalesced tensors must share one dtype");
    flat.push_back(t.reshape({-1}));
  }
  at::Tensor buffer = at::cat(flat);
  const WeftView v = weftView(buffer, "the coalesced buffer");
  const WeftOp op = weftOp(opts.reduceOp, v, comm_);
  std::vector<at::Tensor> outputs = tensors;
  auto after = [buffer, outputs, comm = comm_, op] {
    int64_t offset = 0;
    for (const at::Tensor& t : outputs) {
      t.view({-1}).copy_(buffer.narrow(0, offset, t.numel()));
      offset += t.numel();
    }
    if (op.created) weftRedOpDestroy(op.op, comm);
  };
  return launch(
      c10d::OpType::ALLREDUCE_COALESCED, tensors, {buffer},
      [=, this](weftStream_t stream) {
        check(weftAllReduce(data(buffer), data(buffer), v.count, v.datatype, op.op, comm_, stream),
              "weftAllReduce");
      },
      after);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::reduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::ReduceOptions& opts) {
  const at::Tensor& t = single(tensors, "reduce");
  const WeftView v = weftView(t, "the reduce tensor");
  const WeftOp op = weftOp(opts.reduceOp, v, comm_);
  std::function<void()> after;
  if (op.created) after = [comm = comm_, o = op.op] { weftRedOpDestroy(o, comm); };
  return launch(
      c10d::OpType::REDUCE, tensors, {},
      [=, this](weftStream_t stream) {
        check(weftReduce(data(t), data(t), v.count, v.datatype, op.op,
                         static_cast<int>(opts.rootRank), comm_, stream),
              "weftReduce");
      },
      std::move(after));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  const at::Tensor& in = single(inputs, "allgather");
  TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_,
              "weft: allgather needs one list of ", size_, " output tensors");
  const WeftView v = weftView(in, "the allgather input");
  for (const at::Tensor& out : outputs[0]) {
    weftView(out, "an allgather output");
    checkSameShape(in, out, "allgather input and output");
  }
  at::Tensor flat = flatLike(in, static_cast<size_t>(size_));
  std::vector<at::Tensor> list = outputs[0];
  auto after = [flat, list] {
    const int64_t n = list.empty() ? 0 : list.front().numel();
    for (size_t r = 0; r < list.size(); ++r)
      list[r].view({-1}).copy_(flat.narrow(0, static_cast<int64_t>(r) * n, n));
  };
  return launch(
      c10d::OpType::ALLGATHER, list, {in, flat},
      [=, this](weftStream_t stream) {
        check(weftAllGather(data(in), data(flat), v.count, v.datatype, comm_, stream),
              "weftAllGather");
      },
      after);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::_allgather_base(at::Tensor& output,
                                                                 at::Tensor& input,
                                                                 const c10d::AllgatherOptions&) {
  const WeftView v = weftView(input, "the allgather input");
  weftView(output, "the allgather output");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "weft: _allgather_base dtypes differ");
  TORCH_CHECK(output.numel() == input.numel() * size_, "weft: _allgather_base output has ",
              output.numel(), " elements, expected ", input.numel() * size_);
  return launch(c10d::OpType::_ALLGATHER_BASE, {output}, {input}, [=, this](weftStream_t stream) {
    check(weftAllGather(data(input), data(output), v.count, v.datatype, comm_, stream),
          "weftAllGather");
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  const at::Tensor& in = single(inputs, "gather");
  const WeftView v = weftView(in, "the gather input");
  const int root = static_cast<int>(opts.rootRank);
  at::Tensor flat;
  std::vector<at::Tensor> list;
  std::function<void()> after;
  if (rank_ == root) {
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_,
                "weft: gather needs one list of ", size_, " output tensors on the root");
    for (const at::Tensor& out : outputs[0]) checkSameShape(in, out, "gather input and output");
    list = outputs[0];
    flat = flatLike(in, static_cast<size_t>(size_));
    after = [flat, list] {
      const int64_t n = list.front().numel();
      for (size_t r = 0; r < list.size(); ++r)
        list[r].view({-1}).copy_(flat.narrow(0, static_cast<int64_t>(r) * n, n));
    };
  } else {
    TORCH_CHECK(outputs.empty() || outputs[0].empty(),
                "weft: gather takes output tensors on the root only");
  }
  return launch(
      c10d::OpType::GATHER, list, {in, flat},
      [=, this](weftStream_t stream) {
        check(weftGather(data(in), flat.defined() ? data(flat) : nullptr, v.count, v.datatype, root,
                         comm_, stream),
              "weftGather");
      },
      after);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  const at::Tensor& out = single(outputs, "scatter");
  const WeftView v = weftView(out, "the scatter output");
  const int root = static_cast<int>(opts.rootRank);
  at::Tensor flat;
  if (rank_ == root) {
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_,
                "weft: scatter needs one list of ", size_, " input tensors on the root");
    for (const at::Tensor& in : inputs[0]) checkSameShape(in, out, "scatter input and output");
    std::vector<at::Tensor> pieces;
    for (const at::Tensor& in : inputs[0]) pieces.push_back(in.reshape({-1}));
    flat = at::cat(pieces);
  } else {
    TORCH_CHECK(inputs.empty() || inputs[0].empty(),
                "weft: scatter takes input tensors on the root only");
  }
  return launch(c10d::OpType::SCATTER, outputs, {flat}, [=, this](weftStream_t stream) {
    check(weftScatter(flat.defined() ? data(flat) : nullptr, data(out), v.count, v.datatype, root,
                      comm_, stream),
          "weftScatter");
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const at::Tensor& out = single(outputs, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_,
              "weft: reduce_scatter needs one list of ", size_, " input tensors");
  const WeftView v = weftView(out, "the reduce_scatter output");
  std::vector<at::Tensor> pieces;
  for (const at::Tensor& in : inputs[0]) {
    checkSameShape(in, out, "reduce_scatter input and output");
    pieces.push_back(in.reshape({-1}));
  }
  at::Tensor flat = at::cat(pieces);
  const WeftOp op = weftOp(opts.reduceOp, v, comm_);
  std::function<void()> after;
  if (op.created) after = [comm = comm_, o = op.op] { weftRedOpDestroy(o, comm); };
  return launch(
      c10d::OpType::REDUCE_SCATTER, outputs, {flat},
      [=, this](weftStream_t stream) {
        check(weftReduceScatter(data(flat), data(out), v.count, v.datatype, op.op, comm_, stream),
              "weftReduceScatter");
      },
      std::move(after));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  const WeftView v = weftView(output, "the reduce_scatter output");
  weftView(input, "the reduce_scatter input");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(),
              "weft: _reduce_scatter_base dtypes differ");
  TORCH_CHECK(input.numel() == output.numel() * size_, "weft: _reduce_scatter_base input has ",
              input.numel(), " elements, expected ", output.numel() * size_);
  const WeftOp op = weftOp(opts.reduceOp, v, comm_);
  std::function<void()> after;
  if (op.created) after = [comm = comm_, o = op.op] { weftRedOpDestroy(o, comm); };
  return launch(
      c10d::OpType::_REDUCE_SCATTER_BASE, {output}, {input},
      [=, this](weftStream_t stream) {
        check(
            weftReduceScatter(data(input), data(output), v.count, v.datatype, op.op, comm_, stream),
            "weftReduceScatter");
      },
      std::move(after));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& outputSplitSizes,
    std::vector<int64_t>& inputSplitSizes, const c10d::AllToAllOptions&) {
  const WeftView in = weftView(input, "the alltoall input");
  const WeftView out = weftView(output, "the alltoall output");
  TORCH_CHECK(input.scalar_type() == output.scalar_type(), "weft: alltoall dtypes differ");
  if (outputSplitSizes.empty() && inputSplitSizes.empty()) {
    TORCH_CHECK(input.numel() == output.numel() && input.numel() % size_ == 0,
                "weft: alltoall_base without splits needs equal inputs and outputs divisible by ",
                size_, " (", input.numel(), " and ", output.numel(), " elements)");
    return launch(c10d::OpType::ALLTOALL_BASE, {output}, {input}, [=, this](weftStream_t stream) {
      check(weftAlltoAll(data(input), data(output), in.count / static_cast<size_t>(size_),
                         in.datatype, comm_, stream),
            "weftAlltoAll");
    });
  }
  // Uneven splits along dimension 0: one send and one receive per peer, issued as a group.
  auto counts = [&](const std::vector<int64_t>& splits, const at::Tensor& t, const WeftView& w) {
    std::vector<size_t> elements(static_cast<size_t>(size_));
    const int64_t rows = t.dim() > 0 ? t.size(0) : 1;
    const size_t perRow = rows > 0 ? w.count / static_cast<size_t>(rows) : 0;
    if (splits.empty()) {
      TORCH_CHECK(rows % size_ == 0, "weft: alltoall_base: ", rows, " rows do not split evenly");
      std::fill(elements.begin(), elements.end(), static_cast<size_t>(rows / size_) * perRow);
    } else {
      TORCH_CHECK(static_cast<int>(splits.size()) == size_, "weft: alltoall_base needs ", size_,
                  " split sizes");
      int64_t total = 0;
      for (size_t p = 0; p < splits.size(); ++p) {
        elements[p] = static_cast<size_t>(splits[p]) * perRow;
        total += splits[p];
      }
      TORCH_CHECK(total == rows, "weft: alltoall_base split sizes add up to ", total, ", not ",
                  rows);
    }
    return elements;
  };
  const std::vector<size_t> sendCounts = counts(inputSplitSizes, input, in);
  const std::vector<size_t> recvCounts = counts(outputSplitSizes, output, out);
  const size_t elementBytes = input.element_size() / (in.complex ? 2 : 1);
  return launch(c10d::OpType::ALLTOALL_BASE, {output}, {input}, [=, this](weftStream_t stream) {
    check(weftGroupStart(), "weftGroupStart");
    size_t sendOffset = 0, recvOffset = 0;
    weftResult_t r = weftSuccess;
    const char* failed = "";
    for (int p = 0; p < size_ && r == weftSuccess; ++p) {
      const size_t s = sendCounts[static_cast<size_t>(p)], q = recvCounts[static_cast<size_t>(p)];
      if (s > 0) {
        r = weftSend(static_cast<char*>(data(input)) + sendOffset * elementBytes, s, in.datatype, p,
                     comm_, stream);
        failed = "weftSend";
      }
      if (r == weftSuccess && q > 0) {
        r = weftRecv(static_cast<char*>(data(output)) + recvOffset * elementBytes, q, out.datatype,
                     p, comm_, stream);
        failed = "weftRecv";
      }
      sendOffset += s;
      recvOffset += q;
    }
    const weftResult_t end = weftGroupEnd();
    check(r, failed);
    check(end, "weftGroupEnd");
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::alltoall(std::vector<at::Tensor>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::AllToAllOptions&) {
  TORCH_CHECK(static_cast<int>(outputs.size()) == size_ && static_cast<int>(inputs.size()) == size_,
              "weft: alltoall needs ", size_, " input and ", size_, " output tensors");
  std::vector<WeftView> in, out;
  for (int p = 0; p < size_; ++p) {
    in.push_back(weftView(inputs[static_cast<size_t>(p)], "an alltoall input"));
    out.push_back(weftView(outputs[static_cast<size_t>(p)], "an alltoall output"));
  }
  std::vector<at::Tensor> keep = inputs;
  return launch(c10d::OpType::ALLTOALL, outputs, keep, [=, this](weftStream_t stream) {
    check(weftGroupStart(), "weftGroupStart");
    weftResult_t r = weftSuccess;
    const char* failed = "";
    for (int p = 0; p < size_ && r == weftSuccess; ++p) {
      const size_t i = static_cast<size_t>(p);
      if (in[i].count > 0) {
        r = weftSend(data(inputs[i]), in[i].count, in[i].datatype, p, comm_, stream);
        failed = "weftSend";
      }
      if (r == weftSuccess && out[i].count > 0) {
        r = weftRecv(data(outputs[i]), out[i].count, out[i].datatype, p, comm_, stream);
        failed = "weftRecv";
      }
    }
    const weftResult_t end = weftGroupEnd();
    check(r, failed);
    check(end, "weftGroupEnd");
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::barrier(const c10d::BarrierOptions&) {
  // A one-byte allreduce on the stream: after every operation issued before it.
  at::Tensor token = at::zeros({1}, at::kByte);
  return launch(c10d::OpType::BARRIER, {}, {token}, [=, this](weftStream_t stream) {
    check(weftAllReduce(data(token), data(token), 1, weftUint8, weftSum, comm_, stream),
          "weftAllReduce (barrier)");
  });
}

}  // namespace weft_torch