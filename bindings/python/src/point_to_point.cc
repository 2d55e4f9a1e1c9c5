// ProcessGroupWeft's sends and receives: held, then issued together as one weft group (see
// startCoalescing in process_group.hpp for when, and why never on a timer).
#include "arguments.hpp"
#include "process_group.hpp"
#include "types.hpp"

namespace weft_torch {

std::mutex& ProcessGroupWeft::liveGroupsMutex() {
  static std::mutex mutex;
  return mutex;
}

std::set<ProcessGroupWeft*>& ProcessGroupWeft::liveGroups() {
  static std::set<ProcessGroupWeft*> groups;
  return groups;
}

void ProcessGroupWeft::flushEveryGroup(const WorkWeft* keep) {
  std::lock_guard lock(liveGroupsMutex());
  for (ProcessGroupWeft* group : liveGroups()) group->flushPointToPoint(keep);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::pointToPoint(bool isSend,
                                                              std::vector<at::Tensor>& tensors,
                                                              int peer) {
  const at::Tensor& t = single(tensors, isSend ? "send" : "recv");
  weftView(t, isSend ? "the sent tensor" : "the received tensor");
  TORCH_CHECK(peer >= 0 && peer < size_, "weft: ", isSend ? "send to" : "recv from", " rank ", peer,
              " of a group of ", size_);
  auto work = c10::make_intrusive<WorkWeft>(
      c10::intrusive_ptr<c10d::ProcessGroup>::unsafe_reclaim_from_nonowning(this),
      isSend ? c10d::OpType::SEND : c10d::OpType::RECV,
      isSend ? std::vector<at::Tensor>{} : tensors);
  work->keepAlive = {t};
  work->issuedAt = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  issueHeldLocked();  // an operation launched before this send or receive goes first
  deferred_.push_back({isSend, t, peer, work});
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::send(std::vector<at::Tensor>& tensors, int dstRank,
                                                      int) {
  return pointToPoint(true, tensors, dstRank);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupWeft::recv(std::vector<at::Tensor>& tensors, int srcRank,
                                                      int) {
  return pointToPoint(false, tensors, srcRank);
}

void ProcessGroupWeft::issueGroupLocked(std::vector<PointToPoint>& ops) {
  if (ops.empty()) return;
  weftResult_t r = weftGroupStart();
  const char* failed = "weftGroupStart";
  if (r == weftSuccess) {
    for (const PointToPoint& p : ops) {
      const WeftView v = weftView(p.tensor, "a sent or received tensor");
      r = p.isSend ? weftSend(p.tensor.data_ptr(), v.count, v.datatype, p.peer, comm_, stream_)
                   : weftRecv(p.tensor.data_ptr(), v.count, v.datatype, p.peer, comm_, stream_);
      failed = p.isSend ? "weftSend" : "weftRecv";
      if (r != weftSuccess) break;
    }
    const weftResult_t end = weftGroupEnd();
    if (r == weftSuccess && end != weftSuccess) {
      r = end;
      failed = "weftGroupEnd";
    }
  }
  // A refused group launches nothing: its works fail with weft's message when drained.
  std::exception_ptr error;
  if (r != weftSuccess)
    error = std::make_exception_ptr(std::runtime_error(weftMessage(r, comm_, failed)));
  ++issued_;
  for (PointToPoint& p : ops) {
    p.work->sequence = issued_;
    p.work->error = error;
    pending_.push_back(std::move(p.work));
  }
  ops.clear();
}

void ProcessGroupWeft::flushPointToPoint(const WorkWeft* keep) {
  std::lock_guard lock(mutex_);
  if (!coalescing_) issueGroupLocked(deferred_);
  if (held_ && held_->work.get() != keep) issueHeldLocked();
}

void ProcessGroupWeft::startCoalescing() {
  std::lock_guard lock(mutex_);
  TORCH_CHECK(!coalescing_, "weft: batch_isend_irecv inside another");
  issueGroupLocked(deferred_);  // earlier sends and receives go first, on their own
  issueHeldLocked();
  coalescing_ = true;
}

void ProcessGroupWeft::endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>&) {
  std::lock_guard lock(mutex_);
  TORCH_CHECK(coalescing_, "weft: end of batch_isend_irecv without its start");
  coalescing_ = false;
  issueGroupLocked(deferred_);
}

}  // namespace weft_torch
