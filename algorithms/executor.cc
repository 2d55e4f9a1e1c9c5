#include "algorithms/executor.hpp"

#include <algorithm>
#include <cstring>

#include "lib/base/backoff.hpp"
#include "lib/base/error.hpp"
#include "lib/base/log.hpp"

namespace weft {

Execution::Execution(Transport& transport, std::vector<Work> works, ExecutionContext context)
    : transport_(transport), works_(std::move(works)), context_(context) {
  for (const Work& w : works_) {
    firstStep_.push_back(total_);
    total_ += static_cast<uint32_t>(w.schedule->steps.size());
  }
  waitingOn_.resize(total_);
  requests_ = std::make_unique<Request[]>(total_);
  for (uint32_t wi = 0; wi < works_.size(); ++wi) {
    const Schedule& s = *works_[wi].schedule;
    for (StepId i = 0; i < s.steps.size(); ++i) {
      waitingOn_[firstStep_[wi] + i] = s.steps[i].depCount;
      if (s.steps[i].depCount == 0) ready_.push_back(firstStep_[wi] + i);
    }
  }
  // Start steps in schedule order: the stack pops from the back.
  std::reverse(ready_.begin(), ready_.end());
}

Execution::~Execution() { withdraw(); }

Execution::Location Execution::locate(uint32_t global) const {
  auto it = std::upper_bound(firstStep_.begin(), firstStep_.end(), global);
  const uint32_t work = static_cast<uint32_t>(it - firstStep_.begin()) - 1;
  return {work, global - firstStep_[work]};
}

uint8_t* Execution::address(const Work& work, BufferRef ref, uint64_t bytes) const {
  void* base = nullptr;
  switch (ref.buffer) {
    case BufferId::Send: base = const_cast<void*>(work.buffers.send); break;
    case BufferId::Recv: base = work.buffers.recv; break;
    case BufferId::Scratch: base = work.buffers.scratch; break;
  }
  if (base == nullptr) {
    if (bytes == 0) return nullptr;
    fail(weftInternalError, "rank {}: {} uses a buffer that was not given ({} bytes at {})",
         context_.rank, work.name.str(), bytes, ref.offset);
  }
  return static_cast<uint8_t*>(base) + ref.offset;
}

void Execution::start(uint32_t global) {
  const auto [wi, si] = locate(global);
  const Work& w = works_[wi];
  const Step& step = w.schedule->steps[si];
  Request* req = &requests_[global];
  const uint64_t tag = w.tagBase | step.tag;
  switch (step.kind) {
    case StepKind::Send:
      transport_.postSend(step.peer, tag, address(w, step.src, step.bytes), step.bytes, req);
      inflight_.push_back(global);
      return;
    case StepKind::Recv:
      transport_.postRecv(step.peer, tag, address(w, step.dst, step.bytes), step.bytes, req);
      inflight_.push_back(global);
      return;
    case StepKind::RecvReduce:
      transport_.postRecv(step.peer, tag, address(w, step.tmp, step.bytes), step.bytes, req);
      inflight_.push_back(global);
      return;
    case StepKind::Copy: {
      if (step.bytes > 0) {
        const uint8_t* src = address(w, step.src, step.bytes);
        uint8_t* dst = address(w, step.dst, step.bytes);
        if (src != dst) std::memmove(dst, src, step.bytes);
      }
      complete(global);
      return;
    }
    case StepKind::Reduce:
      if (step.bytes > 0)
        w.reduce(address(w, step.dst, step.bytes), address(w, step.src, step.bytes),
                 address(w, step.tmp, step.bytes), step.bytes / w.elemSize);
      complete(global);
      return;
  }
}

// A posted send or receive finished.
void Execution::finish(uint32_t global) {
  Request& req = requests_[global];
  const auto [wi, si] = locate(global);
  const Work& w = works_[wi];
  const Step& step = w.schedule->steps[si];
  if (req.state.load(std::memory_order_acquire) != Request::kDone) {
    const bool sending = step.kind == StepKind::Send;
    failWith(weftRemoteError,
             fmt::format("rank {}: {} failed: {} rank {}: {}", context_.rank, w.name.str(),
                         sending ? "send to" : "receive from", step.peer,
                         req.error.empty() ? "transport error" : req.error));
  }
  if (step.kind != StepKind::Send && req.bytes != step.bytes)
    failWith(weftInvalidUsage,
             fmt::format("rank {}: {}: rank {} sent {} bytes where {} were expected (do all "
                         "ranks pass the same count and datatype?)",
                         context_.rank, w.name.str(), step.peer, req.bytes, step.bytes));
  if (step.kind == StepKind::RecvReduce && step.bytes > 0)
    w.reduce(address(w, step.dst, step.bytes), address(w, step.src, step.bytes),
             address(w, step.tmp, step.bytes), step.bytes / w.elemSize);
  req.state.store(Request::kIdle, std::memory_order_relaxed);
  complete(global);
}

void Execution::complete(uint32_t global) {
  ++completed_;
  const auto [wi, si] = locate(global);
  const Schedule& s = *works_[wi].schedule;
  for (StepId d : s.dependentsOf(si))
    if (--waitingOn_[firstStep_[wi] + d] == 0) ready_.push_back(firstStep_[wi] + d);
}

Execution::Progress Execution::advance() {
  if (done()) return Progress::Done;
  if (context_.abortFlag && context_.abortFlag->load(std::memory_order_relaxed))
    failWith(weftInvalidUsage,
             fmt::format("rank {}: {} stopped: the communicator was aborted", context_.rank,
                         works_.front().name.str()));
  bool moved = false;
  for (int round = 0; round < 2 && completed_ < total_; ++round) {
    while (!ready_.empty()) {
      const uint32_t g = ready_.back();
      ready_.pop_back();
      start(g);
      moved = true;
    }
    moved |= transport_.progress();
    size_t kept = 0;
    for (size_t i = 0; i < inflight_.size(); ++i) {
      const uint32_t g = inflight_[i];
      if (requests_[g].finished()) {
        finish(g);
        moved = true;
      } else {
        inflight_[kept++] = g;
      }
    }
    inflight_.resize(kept);
    if (ready_.empty()) break;
  }
  // A rank that returns while its transport still owes a peer a message can leave that peer
  // waiting for as long as this rank makes no further call.
  if (completed_ == total_ && transport_.flush()) {
    flushed_ = true;
    return Progress::Done;
  }
  if (!moved && context_.stopOnLostPeer && completed_ < total_) {
    // A peer that is gone stops the whole operation, even if this rank waits on another one
    // (which may itself be stuck behind the dead peer).
    const std::string lost = transport_.lostPeer();
    if (!lost.empty())
      failWith(weftRemoteError, fmt::format("rank {}: {} cannot finish: {}", context_.rank,
                                            works_.front().name.str(), lost));
  }
  if (!moved && context_.deadline.expired())
    failWith(weftTimeout, fmt::format("rank {}: {} timed out after {} ms; still waiting for {}",
                                      context_.rank, works_.front().name.str(), context_.timeoutMs,
                                      pendingSummary()));
  return moved ? Progress::Moved : Progress::Idle;
}

std::string Execution::pendingSummary() const {
  std::vector<int> recvPeers, sendPeers;
  for (uint32_t g : inflight_) {
    const auto [wi, si] = locate(g);
    const Step& step = works_[wi].schedule->steps[si];
    (step.kind == StepKind::Send ? sendPeers : recvPeers).push_back(step.peer);
  }
  auto list = [](std::vector<int>& peers) {
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    return fmt::format("{}", fmt::join(peers, ", "));
  };
  if (completed_ == total_)
    return "its transport to hand over what it owes peers (acknowledgements of received messages)";
  std::string out;
  if (!recvPeers.empty()) out += "data from rank(s) " + list(recvPeers);
  if (!sendPeers.empty())
    out += (out.empty() ? "" : "; ") + std::string("rank(s) ") + list(sendPeers) +
           " to take data";
  return out.empty() ? "local work" : out;
}

void Execution::withdraw() {
  for (uint32_t g : inflight_)
    if (!requests_[g].finished()) transport_.cancel(&requests_[g]);
  inflight_.clear();
}

void Execution::failWith(weftResult_t result, const std::string& why) {
  withdraw();
  WEFT_WARN(kSubsysColl, "{}", why);
  throw Error(result, why);
}

// The longest one sleep in the transport lasts: how late an abort or a deadline can be seen.
constexpr int64_t kMaxSleepUs = 1000;

void runToCompletion(std::span<Execution* const> executions) {
  Backoff backoff;
  for (;;) {
    bool allDone = true, moved = false;
    for (Execution* e : executions) {
      const Execution::Progress p = e->advance();
      allDone &= p == Execution::Progress::Done;
      moved |= p == Execution::Progress::Moved;
    }
    if (allDone) return;
    if (moved) {
      backoff.reset();
      continue;
    }
    // After 1 ms of polling (Backoff::spinning), one execution (the usual case) sleeps on its
    // transport until data arrives; bounded so that deadlines, aborts and lost peers are still
    // noticed. Several executions may sit on different transports and fall back to yielding and
    // napping.
    if (!backoff.spinning() && executions.size() == 1 &&
        executions.front()->waitForActivity(kMaxSleepUs))
      continue;
    backoff.idle();
  }
}

}  // namespace weft
