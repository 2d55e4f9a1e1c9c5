// The sender's state machine, per peer: sends wait in `queued` (in posting order) until the
// record ring has space (and, for large ones, a ticket is free); an eager send completes when
// its record is written; a large send is `announced` until the receiver finishes its ticket
// (acks), and meanwhile, if the receiver pulls it, is streamed through the data ring. Nothing
// here blocks, allocates on the common path, or logs above TRACE.
#include <cstring>
#include <thread>

#include "lib/base/error.hpp"
#include "transports/shm/shm_transport_impl.hpp"

namespace weft::shm {

void ShmTransport::postSend(int peer, uint64_t tag, const void* buf, size_t bytes, Request* req) {
  Peer& p = peerOf(peer, tag, req, "postSend");
  if (closed_ || p.failed) {
    finishRequest(
        req, Request::kFailed,
        fmt::format("rank {}: send to rank {} (tag {:#x}, {} bytes) failed: {}", rank_, p.rank, tag,
                    bytes, closed_ ? "the shm transport is closed" : p.failure));
    return;
  }
  const bool large = bytes > layout_.eagerLimit;
  if (!large && p.queued.empty()) {  // the common case: no bookkeeping at all
    const RecordHeader h{recordBytesFor(bytes), kRecordEager, tag, bytes, 0, 0, 0};
    if (writeRecord(p.out, p.recordHead, p.recordTailSeen, h, buf)) {
      ring(p);
      req->bytes = bytes;
      req->state.store(Request::kDone, std::memory_order_release);
      return;
    }
  }
  Op* op = newOp(req, p, tag, bytes, /*isRecv=*/false);
  op->src = static_cast<const uint8_t*>(buf);
  op->large = large;
  p.queued.pushBack(op);
  ++p.sendsPending;
  flushQueued(p);
}

uint32_t ShmTransport::takeTicket(Peer& p, Op* op) {
  op->ticket = p.freeTickets.back();
  p.freeTickets.pop_back();
  op->generation = p.nextGeneration;
  p.nextGeneration = p.nextGeneration % kGenerationMask + 1;  // 1..kGenerationMask
  p.ticketOwner[op->ticket] = op;
  return op->ticket;
}

void ShmTransport::returnTicket(Peer& p, Op* op) {
  p.ticketOwner[op->ticket] = nullptr;
  p.freeTickets.push_back(op->ticket);
}

// Moves the first queued send into the record ring; false when the ring (or the ticket pool)
// is full.
bool ShmTransport::tryStart(Peer& p, Op* op) {
  if (!op->large) {
    const RecordHeader h{recordBytesFor(op->bytes), kRecordEager, op->tag, op->bytes, 0, 0, 0};
    if (!writeRecord(p.out, p.recordHead, p.recordTailSeen, h, op->src)) return false;
    ring(p);
    p.queued.remove(op);
    --p.sendsPending;
    complete(op, Request::kDone);
    return true;
  }
  if (p.freeTickets.empty()) return false;
  const uint32_t t = takeTicket(p, op);
  // The ticket is announced before the record that names it is published.
  p.out.ticket(t).store(ticketWord(op->generation, kTicketAnnounced), std::memory_order_release);
  const RecordHeader h{
      recordBytesFor(0), kRecordLarge, op->tag, op->bytes, reinterpret_cast<uint64_t>(op->src), t,
      op->generation};
  if (!writeRecord(p.out, p.recordHead, p.recordTailSeen, h, nullptr)) {
    p.out.ticket(t).store(ticketWord(op->generation, kTicketRevoked), std::memory_order_relaxed);
    returnTicket(p, op);
    op->generation = 0;  // not announced
    return false;
  }
  ring(p);
  p.queued.remove(op);
  p.announced.pushBack(op);
  return true;
}

bool ShmTransport::flushQueued(Peer& p) {
  bool moved = false;
  while (Op* op = p.queued.front()) {
    if (!tryStart(p, op)) break;
    moved = true;
  }
  return moved;
}

// Finishes the announced sends whose tickets the receiver ended (only when `acks` moved).
bool ShmTransport::collectAcks(Peer& p) {
  const uint32_t acks = p.out.control->acks.load();
  if (acks == p.acksSeen) return false;
  p.acksSeen = acks;
  for (Op* op = p.announced.front(); op != nullptr;) {
    Op* next = op->next;
    const uint32_t w = p.out.ticket(op->ticket).load(std::memory_order_acquire);
    const TicketState s = ticketState(w);
    if (ticketGeneration(w) == op->generation && (s == kTicketTaken || s == kTicketDeclined)) {
      p.announced.remove(op);
      --p.sendsPending;
      returnTicket(p, op);
      if (p.streaming == op) p.streaming = nullptr;
      if (s == kTicketTaken) {
        complete(op, Request::kDone);
      } else {
        failOp(op, fmt::format("rank {} withdrew the matching receive", p.rank));
      }
    }
    op = next;
  }
  return true;
}

// Serves pull requests: streams the requested send into the data ring as space frees up.
bool ShmTransport::stream(Peer& p) {
  if (p.streaming == nullptr) {
    const uint32_t pulls = p.out.control->pull.load();
    if (pulls == p.pullsSeen) return false;
    // The receiver asks for one message at a time, and the next only after it has all of this
    // one, so at most one request is new.
    p.pullsSeen = pulls;
    PullRequest request;
    std::memcpy(&request, p.out.control->pull.payload, sizeof request);
    Op* op = request.ticket < kTickets ? p.ticketOwner[request.ticket] : nullptr;
    if (op == nullptr || op->generation != request.generation) return true;  // withdrawn
    p.streaming = op;
    op->streamed = 0;
  }
  Op* op = p.streaming;
  const uint32_t ringBytes = p.out.dataMask + 1;
  uint32_t tail = p.out.control->dataTail.load();
  bool moved = false;
  for (size_t budget = ringBytes; op->streamed < op->bytes && budget > 0;) {
    uint32_t room = ringBytes - (p.dataHead - tail);
    if (room == 0) {
      tail = p.out.control->dataTail.load();
      room = ringBytes - (p.dataHead - tail);
      if (room == 0) break;
    }
    const uint32_t at = p.dataHead & p.out.dataMask;
    const size_t n = std::min(
        {size_t{room}, size_t{ringBytes - at}, op->bytes - op->streamed, kStreamPiece, budget});
    std::memcpy(p.out.data + at, op->src + op->streamed, n);
    op->streamed += n;
    p.dataHead += static_cast<uint32_t>(n);
    budget -= n;
    publish(p, p.out.control->dataHead, p.dataHead);
    moved = true;
  }
  if (op->streamed == op->bytes) p.streaming = nullptr;  // completes on its ack
  return moved;
}

bool ShmTransport::serveSends(Peer& p) {
  bool moved = collectAcks(p);
  moved |= stream(p);
  if (!p.queued.empty()) moved |= flushQueued(p);
  return moved;
}

// Takes an announced ticket back so that the receiver will not read the buffer any more.
// Returns how the ticket ended: kTicketRevoked, or kTicketTaken / kTicketDeclined when the
// receiver finished it first. A receiver copying straight from the buffer (a thread of this
// process, inside one memcpy of at most kFetchChunk) is waited for.
TicketState ShmTransport::revoke(Peer& p, Op* op) {
  std::atomic<uint32_t>& word = p.out.ticket(op->ticket);
  for (;;) {
    uint32_t w = ticketWord(op->generation, kTicketAnnounced);
    if (word.compare_exchange_strong(w, ticketWord(op->generation, kTicketRevoked),
                                     std::memory_order_acq_rel, std::memory_order_acquire)) {
      return kTicketRevoked;
    }
    if (ticketGeneration(w) != op->generation) return kTicketRevoked;
    if (ticketState(w) != kTicketCopying) return ticketState(w);
    std::this_thread::yield();
  }
}

void ShmTransport::cancelSend(Op* op) {
  Peer& p = peers_[op->local];
  const std::string cancelled = fmt::format("rank {}: {} cancelled", rank_, describe(*op));
  if (op->generation == 0) {  // still queued: the receiver never heard of it
    p.queued.remove(op);
    --p.sendsPending;
    complete(op, Request::kCancelled, cancelled);
    return;
  }
  p.announced.remove(op);
  --p.sendsPending;
  if (p.streaming == op) p.streaming = nullptr;
  const TicketState end = revoke(p, op);
  returnTicket(p, op);
  if (end == kTicketTaken) {
    complete(op, Request::kDone);
    return;
  }
  if (end == kTicketDeclined) {
    complete(op, Request::kCancelled, cancelled);
    return;
  }
  // The receiver may hold the record (or half of the streamed data): this pair cannot tell
  // later messages from the remains of this one, so it is over, on both sides.
  complete(op, Request::kCancelled,
           cancelled + fmt::format("; the pair with rank {} is broken", p.rank));
  publish(p, p.out.control->broken, 1);
  failPeer(p, fmt::format("the pair with rank {} is broken: a send to it was cancelled before "
                          "its data was taken",
                          p.rank));
}

}  // namespace weft::shm
