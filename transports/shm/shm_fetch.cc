// Taking a matched large message, the receiver's half of the single-copy protocol. Per peer the
// matched receives are taken in order, at most kFetchChunk bytes per progress() call:
// - direct: memcpy from the sender's buffer (a thread of this process), each chunk under the
//   ticket's kTicketCopying state so that the sender cannot revoke the buffer mid-copy;
// - CMA: process_vm_readv from the sender's process; EPERM/ENOSYS under ShmCopy::kAuto switch
//   this transport to pulling for good (said once at INFO);
// - pull: ask the sender (pull flag) to stream the message through the data ring, and drain it.
// Each ends by finishing the sender's ticket (taken) and bumping `acks`.
#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include "lib/base/error.hpp"
#include "lib/base/log.hpp"
#include "transports/shm/shm_transport_impl.hpp"

namespace weft::shm {

Fetch ShmTransport::fetchFor(const Peer& p) const {
  switch (options_.copy) {
    case ShmCopy::kDirect: return Fetch::kDirect;
    case ShmCopy::kCma: return Fetch::kCma;
    case ShmCopy::kMailbox: return Fetch::kPull;
    case ShmCopy::kAuto: break;
  }
  if (p.sameProcess) return Fetch::kDirect;
  return cmaRefused_ ? Fetch::kPull : Fetch::kCma;
}

bool ShmTransport::finishTicket(Peer& p, Op* op, TicketState outcome) {
  uint32_t announced = ticketWord(op->srcGeneration, kTicketAnnounced);
  if (!p.in.ticket(op->srcTicket)
           .compare_exchange_strong(announced, ticketWord(op->srcGeneration, outcome),
                                    std::memory_order_acq_rel, std::memory_order_acquire)) {
    return false;
  }
  publish(p, p.in.control->acks, ++p.acksSent);
  return true;
}

void ShmTransport::finishFetch(Peer& p, Op* op) {
  p.fetching.remove(op);
  if (op->req == nullptr) {  // cancelled while streaming: drained, now declined
    finishTicket(p, op, kTicketDeclined);
    releaseOp(op);
  } else if (finishTicket(p, op, kTicketTaken)) {
    complete(op, Request::kDone);
  } else {
    failOp(op, fmt::format("rank {} withdrew the message (its send was cancelled)", p.rank));
  }
}

void ShmTransport::abandonFetch(Peer& p, Op* op, const std::string& why) {
  p.fetching.remove(op);
  finishTicket(p, op, kTicketDeclined);
  failOp(op, why);
}

bool ShmTransport::fetchStep(Peer& p) {
  size_t budget = kFetchChunk;
  bool moved = false;
  while (Op* op = p.fetching.front()) {
    if (op->fetch == Fetch::kPull) return fetchPull(p, op) || moved;
    if (budget == 0 || p.failed) break;
    op->fetch == Fetch::kDirect ? fetchDirect(p, op, budget) : fetchCma(p, op, budget);
    moved = true;
  }
  return moved;
}

void ShmTransport::fetchDirect(Peer& p, Op* op, size_t& budget) {
  std::atomic<uint32_t>& word = p.in.ticket(op->srcTicket);
  const uint32_t gen = op->srcGeneration;
  uint32_t announced = ticketWord(gen, kTicketAnnounced);
  if (!word.compare_exchange_strong(announced, ticketWord(gen, kTicketCopying),
                                    std::memory_order_acq_rel, std::memory_order_acquire)) {
    abandonFetch(p, op,
                 fmt::format("rank {} withdrew the message (its send was cancelled)", p.rank));
    return;
  }
  const size_t n = std::min(budget, op->bytes - op->fetched);
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the sender published its buffer's address
  std::memcpy(op->dst + op->fetched, reinterpret_cast<const uint8_t*>(op->address) + op->fetched,
              n);
  op->fetched += n;
  budget -= n;
  const bool last = op->fetched == op->bytes;
  word.store(ticketWord(gen, last ? kTicketTaken : kTicketAnnounced), std::memory_order_release);
  if (last) {
    publish(p, p.in.control->acks, ++p.acksSent);
    p.fetching.remove(op);
    complete(op, Request::kDone);
  }
}

void ShmTransport::fetchCma(Peer& p, Op* op, size_t& budget) {
  const size_t n = std::min(budget, op->bytes - op->fetched);
  iovec local{op->dst + op->fetched, n};
  iovec remote{reinterpret_cast<void*>(op->address + op->fetched), n};  // NOLINT: theirs
  const ssize_t got = process_vm_readv(p.pid, &local, 1, &remote, 1, 0);
  if (got > 0) {
    op->fetched += static_cast<size_t>(got);
    budget -= std::min(budget, static_cast<size_t>(got));
    if (op->fetched == op->bytes) finishFetch(p, op);
    return;
  }
  const int err = got < 0 ? errno : EFAULT;
  if ((err == EPERM || err == ENOSYS) && options_.copy == ShmCopy::kAuto) {
    if (!cmaRefused_) {
      cmaRefused_ = true;
      WEFT_INFO(kSubsysShm,
                "shm[{}] rank {}: process_vm_readv from rank {} (pid {}) refused: {}; large "
                "messages from other processes go through the mailboxes from now on",
                options_.label, rank_, p.rank, p.pid, std::strerror(err));
    }
    op->fetch = Fetch::kPull;
    op->fetched = 0;
    return;
  }
  if (err == ESRCH) {
    failPeer(p, fmt::format("rank {} (pid {}) exited", p.rank, p.pid));
    return;
  }
  // EFAULT: the sender's buffer is gone (a revoked send); EPERM under ShmCopy::kCma.
  abandonFetch(p, op,
               fmt::format("process_vm_readv of {} bytes from rank {} (pid {}) failed: {}{}", n,
                           p.rank, p.pid, std::strerror(err),
                           options_.copy == ShmCopy::kCma ? " (CMA forced by the options)" : ""));
}

// The front of p.fetching, through the data ring: one pull request, then whatever the sender
// has streamed so far.
bool ShmTransport::fetchPull(Peer& p, Op* op) {
  bool moved = false;
  if (!p.pulling) {
    const PullRequest request{op->srcTicket, op->srcGeneration};
    std::memcpy(p.in.control->pull.payload, &request, sizeof request);
    publish(p, p.in.control->pull, ++p.pullsSent);
    p.pulling = true;
    op->fetched = 0;
    moved = true;
  }
  const uint32_t ringBytes = p.in.dataMask + 1;
  uint32_t available = p.in.control->dataHead.load() - p.dataTail;
  while (available > 0 && op->fetched < op->bytes) {
    const uint32_t at = p.dataTail & p.in.dataMask;
    const size_t n = std::min(
        {size_t{available}, size_t{ringBytes - at}, op->bytes - op->fetched, kStreamPiece});
    if (op->req != nullptr) std::memcpy(op->dst + op->fetched, p.in.data + at, n);
    op->fetched += n;
    p.dataTail += static_cast<uint32_t>(n);
    available -= static_cast<uint32_t>(n);
    publish(p, p.in.control->dataTail, p.dataTail);
    moved = true;
  }
  if (op->fetched == op->bytes) {
    p.pulling = false;
    finishFetch(p, op);
  }
  return moved;
}

}  // namespace weft::shm
