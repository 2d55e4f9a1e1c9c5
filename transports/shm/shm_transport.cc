// Creation, the progress loop, failed peers (dead processes, broken pairs), cancel and close of
// the shm transport.
#include "transports/shm/shm_transport.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <thread>

#include "lib/base/error.hpp"
#include "lib/base/log.hpp"
#include "transports/shm/shm_transport_impl.hpp"

namespace weft {

const char* shmCopyName(ShmCopy copy) {
  switch (copy) {
    case ShmCopy::kAuto: return "auto";
    case ShmCopy::kCma: return "cma";
    case ShmCopy::kMailbox: return "mailbox";
    case ShmCopy::kDirect: return "direct";
  }
  return "?";
}

uint64_t defaultMailboxBytes(int nlocal) {
  const uint64_t pairs = uint64_t(std::max(nlocal, 1)) * uint64_t(std::max(nlocal, 1));
  const uint64_t fit = (uint64_t{64} << 20) / pairs / 4096 * 4096;
  return std::clamp<uint64_t>(fit, 32 << 10, 256 << 10);
}

std::unique_ptr<Transport> createShmTransport(ShmSegment& segment, const LocalGroup& group,
                                              const ShmTransportOptions& options) {
  return std::make_unique<shm::ShmTransport>(segment, group, options);
}

namespace shm {

void finishRequest(Request* req, Request::State state, std::string error) {
  if (state == Request::kFailed) WEFT_TRACE(kSubsysShm, "{}", error);
  req->error = std::move(error);
  req->state.store(state, std::memory_order_release);
}

ShmTransport::ShmTransport(ShmSegment& segment, const LocalGroup& group,
                           const ShmTransportOptions& options)
    : segment_(segment), options_(options) {
  const int n = group.size();
  if (n < 1 || group.me < 0 || group.me >= n || segment.geometry().nlocal != n ||
      !std::is_sorted(group.ranks.begin(), group.ranks.end()) ||
      std::adjacent_find(group.ranks.begin(), group.ranks.end()) != group.ranks.end()) {
    fail(weftInternalError,
         "shm transport: local group of {} ranks (me {}) does not fit a segment of {} local ranks "
         "or its ranks are not ascending",
         n, group.me, segment.geometry().nlocal);
  }
  me_ = group.me;
  ranks_ = group.ranks;
  rank_ = ranks_[me_];
  layout_ = MailboxLayout::make(segment.geometry().mailboxBytes, options.eagerBytes);
  const pid_t self = getpid();
  std::vector<pid_t> pids = group.pids;
  if (pids.size() != static_cast<size_t>(n)) {
    if (!group.oneProcess) {
      fail(weftInternalError, "rank {}: local group has {} pids for {} ranks", rank_, pids.size(),
           n);
    }
    pids.assign(static_cast<size_t>(n), self);
  }
  peers_.resize(static_cast<size_t>(n));
  exited_.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    Peer& p = peers_[i];
    p.rank = ranks_[i];
    p.local = i;
    p.pid = pids[i];
    p.sameProcess = group.oneProcess || p.pid == self;
    if (options.copy == ShmCopy::kDirect && !p.sameProcess) {
      fail(weftInvalidUsage,
           "rank {}: ShmCopy::kDirect needs every local rank in this process, but rank {} is "
           "process {}",
           rank_, p.rank, p.pid);
    }
    p.out = Mailbox(segment.mailbox(me_, i), layout_);
    p.in = Mailbox(segment.mailbox(i, me_), layout_);
    p.freeTickets.reserve(kTickets);
    for (uint32_t t = kTickets; t-- > 0;) p.freeTickets.push_back(t);
    if (p.sameProcess) continue;
    if (!ProcessWatch::supported() || !watch_.add(p.rank, p.pid)) {
      WEFT_WARN(kSubsysShm,
                "shm[{}] rank {}: cannot watch rank {} (pid {}) with a pidfd; if it dies, requests "
                "involving it end only by their deadlines",
                options_.label, rank_, p.rank, p.pid);
    }
  }
  WEFT_INFO(kSubsysShm,
            "shm[{}] rank {}: {} local ranks, copy {}, eager up to {} bytes, record ring {} "
            "bytes, data ring {} bytes",
            options_.label, rank_, n, shmCopyName(options.copy), layout_.eagerLimit,
            layout_.recordsBytes, layout_.dataBytes);
  openDoorbell();
}

ShmTransport::~ShmTransport() {
  shutDown(Deadline::afterMs(0));
  if (doorbell_ >= 0) ::close(doorbell_);
}

namespace {

// Where local rank `local` of the segment named `segment` takes doorbells: "weft-doorbell" and
// the segment's name and the rank, in the abstract namespace (nothing in the file system; the
// name goes with the socket, whatever ends the process). The ranks of a host share a network
// namespace, whose abstract names they all see.
socklen_t doorbellAddress(const std::string& segment, int local, sockaddr_un* address) {
  *address = sockaddr_un{};
  address->sun_family = AF_UNIX;
  const std::string name = fmt::format("weft-doorbell{}-{}", segment, local);
  const size_t bytes = std::min(name.size(), sizeof address->sun_path - 1);
  std::memcpy(address->sun_path + 1, name.data(), bytes);  // sun_path[0] = 0: abstract
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + bytes);
}

}  // namespace

void ShmTransport::openDoorbell() {
  for (Peer& p : peers_) p.doorbellBytes = doorbellAddress(segment_.name(), p.local, &p.doorbell);
  const Peer& me = peers_[static_cast<size_t>(me_)];
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0 &&
      ::bind(fd, reinterpret_cast<const sockaddr*>(&me.doorbell), me.doorbellBytes) == 0) {
    doorbell_ = fd;
    return;
  }
  const int error = errno;
  if (fd >= 0) ::close(fd);
  WEFT_INFO(kSubsysShm,
            "shm[{}] rank {}: no doorbell socket ({}): idle waits yield and nap instead of "
            "sleeping until a peer publishes",
            options_.label, rank_, std::strerror(error));
}

// The sleeper says so, then looks at everything once more; a peer publishes, then looks at the
// flag (ring). Both with sequentially consistent fences between their store and their load
// (Dekker's protocol), so either the sleeper's progress sees the peer's news or the peer sees
// the flag and rings: no wake-up is lost. The flag is cleared by whoever rings (one doorbell
// per sleep) or by the sleeper when it wakes.
int ShmTransport::armWake() {
  if (doorbell_ < 0 || closed_) return kCannotWake;
  std::atomic<uint32_t>& asleep = segment_.control(me_).asleep;
  asleep.store(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (progress()) {
    asleep.store(0, std::memory_order_relaxed);
    return kWakeNow;
  }
  return doorbell_;
}

void ShmTransport::disarmWake() {
  segment_.control(me_).asleep.store(0, std::memory_order_relaxed);
  // Doorbells rung for this sleep, or late for an earlier one: at most a spurious wake-up.
  char sink[16];
  while (::recv(doorbell_, sink, sizeof sink, MSG_DONTWAIT) > 0) {
  }
}

void ShmTransport::ring(const Peer& p) {
  if (doorbell_ < 0 || p.local == me_) return;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  std::atomic<uint32_t>& asleep = segment_.control(p.local).asleep;
  if (asleep.load(std::memory_order_relaxed) == 0 || asleep.exchange(0) == 0) return;
  // A full socket already holds a doorbell; any other failure leaves the sleeper its bound.
  const char bell = 1;
  ::sendto(doorbell_, &bell, 1, MSG_DONTWAIT | MSG_NOSIGNAL,
           reinterpret_cast<const sockaddr*>(&p.doorbell), p.doorbellBytes);
}

Peer& ShmTransport::peerOf(int rank, uint64_t tag, Request* req, const char* what) {
  auto it = std::lower_bound(ranks_.begin(), ranks_.end(), rank);
  if (it == ranks_.end() || *it != rank || (tag & ~kTagMask) != 0 || req == nullptr) {
    fail(weftInternalError,
         "rank {}: {}(peer {}, tag {:#x}) refused: the shm transport reaches only the {} ranks "
         "of this host and tags of {} bits",
         rank_, what, rank, tag, ranks_.size(), kTagBits);
  }
  req->bytes = 0;
  req->error.clear();
  req->handle = nullptr;
  req->state.store(Request::kPosted, std::memory_order_relaxed);
  return peers_[static_cast<size_t>(it - ranks_.begin())];
}

std::string ShmTransport::describe(const Op& op) const {
  return fmt::format("{} rank {} (tag {:#x}, {} bytes)", op.isRecv ? "recv from" : "send to",
                     peers_[op.local].rank, op.tag, op.bytes);
}

Op* ShmTransport::newOp(Request* req, const Peer& p, uint64_t tag, size_t bytes, bool isRecv) {
  if (freeOps_.empty()) {
    opStore_.push_back(std::make_unique<Op>());
    freeOps_.push_back(opStore_.back().get());
  }
  Op* op = freeOps_.back();
  freeOps_.pop_back();
  *op = Op{};
  op->req = req;
  op->local = p.local;
  op->tag = tag;
  op->bytes = bytes;
  op->isRecv = isRecv;
  req->handle = op;
  return op;
}

void ShmTransport::releaseOp(Op* op) {
  freeOps_.push_back(op);
}

void ShmTransport::complete(Op* op, Request::State state, std::string error) {
  if (Request* req = op->req) {
    req->handle = nullptr;
    if (state == Request::kDone) req->bytes = op->bytes;
    finishRequest(req, state, std::move(error));
  }
  releaseOp(op);
}

void ShmTransport::failOp(Op* op, const std::string& why) {
  std::string message = fmt::format("rank {}: {} failed: {}", rank_, describe(*op), why);
  complete(op, Request::kFailed, std::move(message));
}

Unexpected* ShmTransport::newUnexpected() {
  if (freeUnexpected_.empty()) {
    unexpectedStore_.push_back(std::make_unique<Unexpected>());
    freeUnexpected_.push_back(unexpectedStore_.back().get());
  }
  Unexpected* u = freeUnexpected_.back();
  freeUnexpected_.pop_back();
  return u;
}

void ShmTransport::releaseUnexpected(Unexpected* u) {
  freeUnexpected_.push_back(u);
}

bool ShmTransport::progress() {
  if (closed_) return false;
  bool moved = false;
  for (Peer& p : peers_) {
    if (p.failed) continue;
    moved |= drainRecords(p);
    if (!p.fetching.empty() && !p.failed) moved |= fetchStep(p);
    if (p.sendsPending != 0 && !p.failed) moved |= serveSends(p);
  }
  if (++progressCalls_ % kCheckEveryCalls == 0) checkPeers();
  return moved;
}

// Every few milliseconds: peer processes that exited, and pairs their senders broke.
void ShmTransport::checkPeers() {
  const Clock::time_point now = Clock::now();
  if (now < nextCheck_) return;
  nextCheck_ = now + std::chrono::milliseconds(kCheckIntervalMs);
  if (!watch_.empty()) {
    exited_.clear();
    watch_.poll(exited_);
    for (int rank : exited_) {
      auto it = std::lower_bound(ranks_.begin(), ranks_.end(), rank);
      Peer& p = peers_[static_cast<size_t>(it - ranks_.begin())];
      failPeer(p, fmt::format("rank {} (pid {}) exited", p.rank, p.pid));
    }
    // Every rank found gone in one look is named: when a survivor failed first and left, the
    // rank that died before it is in the same list.
    if (lost_.empty() && !exited_.empty()) lost_ = watch_.describeExited(exited_);
  }
  for (Peer& p : peers_) {
    if (!p.failed && p.in.control->broken.load() != 0) {
      failPeer(p, fmt::format("rank {} broke the pair: it cancelled a send to rank {} before its "
                              "data was taken",
                              p.rank, rank_));
    }
  }
}

void ShmTransport::failPeer(Peer& p, std::string why, bool drainFirst) {
  if (p.failed) return;
  if (drainFirst) drainRecords(p);
  if (p.failed) return;  // the drain found a corrupt record and failed the peer itself
  p.failed = true;
  p.failure = std::move(why);
  size_t failed = 0;
  while (Op* op = p.posted.front()) {
    p.posted.remove(op);
    failOp(op, p.failure);
    ++failed;
  }
  while (Op* op = p.fetching.front()) {
    p.fetching.remove(op);
    if (op->req != nullptr) ++failed;
    failOp(op, p.failure);
  }
  p.pulling = false;
  for (Unexpected* u = p.unexpected.front(); u != nullptr;) {
    Unexpected* next = u->next;
    if (u->large) {
      p.unexpected.remove(u);
      releaseUnexpected(u);
    }
    u = next;
  }
  while (Op* op = p.queued.front()) {
    p.queued.remove(op);
    failOp(op, p.failure);
    ++failed;
  }
  while (Op* op = p.announced.front()) {
    p.announced.remove(op);
    const TicketState end = revoke(p, op);
    returnTicket(p, op);
    if (end == kTicketTaken) {
      complete(op, Request::kDone);
    } else {
      failOp(op, p.failure);
      ++failed;
    }
  }
  p.streaming = nullptr;
  p.sendsPending = 0;
  if (failed > 0 && !closed_) {
    WEFT_WARN(kSubsysShm, "shm[{}] rank {}: {}; failing {} requests", options_.label, rank_,
              p.failure, failed);
  } else {
    WEFT_INFO(kSubsysShm, "shm[{}] rank {}: {}", options_.label, rank_, p.failure);
  }
}

void ShmTransport::cancel(Request* req) {
  if (req == nullptr || req->finished()) return;
  auto* op = static_cast<Op*>(req->handle);
  if (op == nullptr) {  // cannot happen for a posted request; be safe
    finishRequest(req, Request::kCancelled, fmt::format("rank {}: request cancelled", rank_));
    return;
  }
  op->isRecv ? cancelRecv(op) : cancelSend(op);
}

void ShmTransport::shutDown(Deadline deadline) noexcept {
  if (closed_) return;
  try {
    auto sendsLeft = [&] {
      for (const Peer& p : peers_) {
        if (!p.failed && p.sendsPending != 0) return true;
      }
      return false;
    };
    // Only outstanding sends need anyone else; dead peers fail theirs within kCheckIntervalMs.
    while (sendsLeft() && !deadline.expired()) {
      if (!progress()) std::this_thread::yield();
    }
    for (Peer& p : peers_) {
      if (!p.failed && p.sendsPending != 0) {
        WEFT_WARN(kSubsysShm, "shm[{}] rank {}: closing with {} sends to rank {} not taken",
                  options_.label, rank_, p.sendsPending, p.rank);
        const std::string why = fmt::format(
            "the shm transport was closed before rank {} took the data (pair broken)", p.rank);
        publish(p, p.out.control->broken, 1);
        failPeer(p, why);
      }
      auto cancelled = [&](Op* op) {
        complete(op, Request::kCancelled,
                 fmt::format("rank {}: {} cancelled: the shm transport was closed", rank_,
                             describe(*op)));
      };
      while (Op* op = p.posted.front()) p.posted.remove(op), cancelled(op);
      while (Op* op = p.fetching.front()) {
        p.fetching.remove(op);
        if (!p.failed) finishTicket(p, op, kTicketDeclined);
        cancelled(op);
      }
      while (Unexpected* u = p.unexpected.front()) p.unexpected.remove(u), releaseUnexpected(u);
    }
  } catch (const std::exception& e) {
    WEFT_WARN(kSubsysShm, "shm[{}] rank {}: close: {}", options_.label, rank_, e.what());
  }
  watch_.clear();
  closed_ = true;
}

}  // namespace shm
}  // namespace weft
