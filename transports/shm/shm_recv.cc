// The receiver's side of the record ring, per peer: every progress() drains whatever records
// the peer published into local lists, whether or not a receive waits for them (so that an
// unexpected message never holds up the ring), and matches (peer, tag) locally: a message goes
// to the first posted receive with its tag, a receive to the first arrived message with it.
#include <cstring>

#include "lib/base/error.hpp"
#include "transports/shm/shm_transport_impl.hpp"

namespace weft::shm {
namespace {

std::string sizeMismatch(int rank, int peer, uint64_t tag, uint64_t has, size_t expected) {
  return fmt::format("rank {}: message from rank {} (tag {:#x}) has {} bytes, expected {}", rank,
                     peer, tag, has, expected);
}

}  // namespace

void ShmTransport::postRecv(int peer, uint64_t tag, void* buf, size_t bytes, Request* req) {
  Peer& p = peerOf(peer, tag, req, "postRecv");
  if (closed_) {
    finishRequest(req, Request::kFailed,
                  fmt::format("rank {}: recv from rank {} (tag {:#x}, {} bytes) failed: the shm "
                              "transport is closed",
                              rank_, p.rank, tag, bytes));
    return;
  }
  for (Unexpected* u = p.unexpected.front(); u != nullptr; u = u->next) {
    if (u->tag != tag) continue;
    p.unexpected.remove(u);
    if (u->large) {
      Op* op = newOp(req, p, tag, bytes, /*isRecv=*/true);
      op->dst = static_cast<uint8_t*>(buf);
      matchLarge(p, op, u->size, u->address, u->ticket, u->generation);
    } else if (u->size != bytes) {
      finishRequest(req, Request::kFailed, sizeMismatch(rank_, p.rank, tag, u->size, bytes));
    } else {
      if (bytes != 0) std::memcpy(buf, u->payload.data(), bytes);
      req->bytes = bytes;
      req->state.store(Request::kDone, std::memory_order_release);
    }
    releaseUnexpected(u);
    return;
  }
  if (p.failed) {
    finishRequest(req, Request::kFailed,
                  fmt::format("rank {}: recv from rank {} (tag {:#x}, {} bytes) failed: {}", rank_,
                              p.rank, tag, bytes, p.failure));
    return;
  }
  Op* op = newOp(req, p, tag, bytes, /*isRecv=*/true);
  op->dst = static_cast<uint8_t*>(buf);
  p.posted.pushBack(op);
}

bool ShmTransport::drainRecords(Peer& p) {
  const uint32_t head = p.in.control->recordHead.load();
  if (head == p.recordTail) return false;
  const uint32_t ringBytes = p.in.recordsMask + 1;
  while (p.recordTail != head) {
    const uint8_t* at = p.in.records + (p.recordTail & p.in.recordsMask);
    RecordHeader h;
    std::memcpy(&h, at, sizeof h);
    if (const char* problem = recordProblem(h, p.recordTail, head - p.recordTail, ringBytes)) {
      failPeer(p,
               fmt::format("the mailbox from rank {} is corrupt at byte {}: {}", p.rank,
                           p.recordTail, problem),
               /*drainFirst=*/false);
      return true;
    }
    deliver(p, h, at + kRecordHeaderBytes);
    p.recordTail += h.recordBytes;
  }
  publish(p, p.in.control->recordTail, p.recordTail);
  return true;
}

void ShmTransport::deliver(Peer& p, const RecordHeader& h, const uint8_t* payload) {
  if (h.kind == kRecordPad) return;
  Op* op = p.posted.front();
  while (op != nullptr && op->tag != h.tag) op = op->next;
  if (op != nullptr) {
    p.posted.remove(op);
    if (h.kind == kRecordLarge) {
      matchLarge(p, op, h.size, h.address, h.ticket, h.generation);
    } else if (h.size != op->bytes) {
      complete(op, Request::kFailed, sizeMismatch(rank_, p.rank, h.tag, h.size, op->bytes));
    } else {
      if (h.size != 0) std::memcpy(op->dst, payload, h.size);
      complete(op, Request::kDone);
    }
    return;
  }
  Unexpected* u = newUnexpected();
  u->tag = h.tag;
  u->size = h.size;
  u->large = h.kind == kRecordLarge;
  if (u->large) {
    u->address = h.address;
    u->ticket = h.ticket;
    u->generation = h.generation;
  } else {
    u->payload.assign(payload, payload + h.size);
  }
  p.unexpected.pushBack(u);
}

// A posted receive meets the record of a large message: queue it to be fetched, or, when the
// sizes differ, fail it and let the send complete without its data being read.
void ShmTransport::matchLarge(Peer& p, Op* op, uint64_t size, uint64_t address, uint32_t ticket,
                              uint32_t generation) {
  op->address = address;
  op->srcTicket = ticket;
  op->srcGeneration = generation;
  if (size != op->bytes) {
    finishTicket(p, op, kTicketTaken);
    complete(op, Request::kFailed, sizeMismatch(rank_, p.rank, op->tag, size, op->bytes));
    return;
  }
  op->fetch = fetchFor(p);
  op->fetched = 0;
  p.fetching.pushBack(op);
}

void ShmTransport::cancelRecv(Op* op) {
  Peer& p = peers_[op->local];
  std::string cancelled = fmt::format("rank {}: {} cancelled", rank_, describe(*op));
  if (op->srcGeneration == 0) {  // not matched yet
    p.posted.remove(op);
    complete(op, Request::kCancelled, std::move(cancelled));
    return;
  }
  if (p.pulling && p.fetching.front() == op) {
    // The sender is streaming it through the data ring: the rest must still be drained (into
    // nowhere) before the next message can follow, so the op stays, detached from the request.
    Request* req = op->req;
    op->req = nullptr;
    req->handle = nullptr;
    finishRequest(req, Request::kCancelled, std::move(cancelled));
    return;
  }
  p.fetching.remove(op);
  finishTicket(p, op, kTicketDeclined);
  complete(op, Request::kCancelled, std::move(cancelled));
}

}  // namespace weft::shm
