// Internals of the shm transport, shared by its source files: shm_transport.cc (creation, the
// progress loop, failed peers, close), shm_send.cc (the sender's state machine), shm_recv.cc
// (draining records and matching) and shm_fetch.cc (taking large messages: direct, CMA, pull).
// Nothing outside transports/shm includes this.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/base/process_watch.hpp"
#include "transports/shm/mailbox.hpp"
#include "transports/shm/shm_transport.hpp"

namespace weft::shm {

// A doubly linked list threaded through its elements (`prev`, `next`): order is kept and
// removal is O(1), and nothing is allocated.
template <class T>
class IntrusiveList {
 public:
  bool empty() const { return head_ == nullptr; }
  T* front() const { return head_; }
  void pushBack(T* x) {
    x->prev = tail_;
    x->next = nullptr;
    (tail_ ? tail_->next : head_) = x;
    tail_ = x;
  }
  void remove(T* x) {
    (x->prev ? x->prev->next : head_) = x->next;
    (x->next ? x->next->prev : tail_) = x->prev;
    x->prev = x->next = nullptr;
  }

 private:
  T* head_ = nullptr;
  T* tail_ = nullptr;
};

// How a matched large message is taken.
enum class Fetch : uint8_t { kDirect, kCma, kPull };

// One posted request; Request::handle points to it until it finishes. Pooled.
struct Op {
  Op* prev = nullptr;
  Op* next = nullptr;
  Request* req = nullptr;  // nullptr: detached (a cancelled receive still draining its stream)
  int local = 0;           // the peer's local index
  uint64_t tag = 0;
  size_t bytes = 0;  // posted size
  bool isRecv = false;
  // Sends.
  const uint8_t* src = nullptr;
  bool large = false;
  uint32_t ticket = 0, generation = 0;  // generation 0: not announced yet (still queued)
  size_t streamed = 0;
  // Receives; for a matched large message, where it is and how far the copy got.
  uint8_t* dst = nullptr;
  uint64_t address = 0;
  uint32_t srcTicket = 0, srcGeneration = 0;  // srcGeneration 0: not matched yet (posted)
  Fetch fetch = Fetch::kPull;
  size_t fetched = 0;
};

// A message that arrived before its receive was posted. Pooled; `payload` keeps its capacity.
struct Unexpected {
  Unexpected* prev = nullptr;
  Unexpected* next = nullptr;
  uint64_t tag = 0;
  size_t size = 0;
  bool large = false;
  std::vector<uint8_t> payload;  // eager
  uint64_t address = 0;          // large
  uint32_t ticket = 0, generation = 0;
};

struct Peer {
  int rank = -1;  // global
  int local = -1;
  pid_t pid = 0;
  bool sameProcess = false;
  sockaddr_un doorbell{};  // its doorbell socket's (abstract) address
  socklen_t doorbellBytes = 0;
  Mailbox out;  // mailbox(me, peer): this rank sends
  Mailbox in;   // mailbox(peer, me): this rank receives
  // Sender side.
  uint32_t recordHead = 0, recordTailSeen = 0, dataHead = 0, acksSeen = 0, pullsSeen = 0;
  IntrusiveList<Op> queued;     // sends not yet in the record ring, in posting order
  IntrusiveList<Op> announced;  // large sends in the ring, waiting for the receiver
  size_t sendsPending = 0;      // queued + announced
  std::array<Op*, kTickets> ticketOwner{};
  std::vector<uint32_t> freeTickets;
  uint32_t nextGeneration = 1;
  Op* streaming = nullptr;  // the large send being pulled through the data ring
  // Receiver side.
  uint32_t recordTail = 0, dataTail = 0, pullsSent = 0, acksSent = 0;
  IntrusiveList<Op> posted;              // receives not matched yet, in posting order
  IntrusiveList<Unexpected> unexpected;  // in arrival order
  IntrusiveList<Op> fetching;            // matched large receives; the first is being taken
  bool pulling = false;                  // a pull request for fetching.front() is out
  // Failure: a dead process or a broken pair; every later request fails with `failure`.
  bool failed = false;
  std::string failure;
};

// How much of a large message one progress() call copies per peer (direct and CMA): bounded
// steps keep progress() short and let other peers' messages interleave.
constexpr size_t kFetchChunk = 1 << 20;
// The sender publishes the data ring's head every this many bytes while streaming.
constexpr size_t kStreamPiece = 16 << 10;
// progress() reads the clock every this many calls, and polls peers at most this often.
constexpr uint32_t kCheckEveryCalls = 16;
constexpr int64_t kCheckIntervalMs = 5;

// Sets `error`, then the state with release order (a reader that sees the state sees the rest).
void finishRequest(Request* req, Request::State state, std::string error);

class ShmTransport final : public Transport {
 public:
  ShmTransport(ShmSegment& segment, const LocalGroup& group, const ShmTransportOptions& options);
  ~ShmTransport() override;

  const char* name() const override { return "shm"; }
  void postSend(int peer, uint64_t tag, const void* buf, size_t bytes, Request* req) override;
  void postRecv(int peer, uint64_t tag, void* buf, size_t bytes, Request* req) override;
  bool progress() override;
  void cancel(Request* req) override;
  void close(Deadline deadline) override { shutDown(deadline); }
  std::string lostPeer() const override { return lost_; }
  // Every op in use belongs to a request not finished yet, or to a cancelled receive whose
  // stream is still being drained.
  bool busy() const override { return freeOps_.size() != opStore_.size(); }
  // Sleeping on the doorbell socket (README.md, "Sleeping").
  int armWake() override;
  void disarmWake() override;

 private:
  // shm_transport.cc: bookkeeping, failures, teardown.
  Peer& peerOf(int rank, uint64_t tag, Request* req, const char* what);
  std::string describe(const Op& op) const;
  Op* newOp(Request* req, const Peer& p, uint64_t tag, size_t bytes, bool isRecv);
  void releaseOp(Op* op);
  // Finishes op's request (if still attached) and returns op to the pool.
  void complete(Op* op, Request::State state, std::string error = {});
  void failOp(Op* op, const std::string& why);
  Unexpected* newUnexpected();
  void releaseUnexpected(Unexpected* u);
  void checkPeers();
  // Binds this rank's doorbell socket; without one (said at INFO) armWake cannot wake.
  void openDoorbell();
  // Publishes `value` in a flag that p watches, then wakes p if it sleeps in waitForActivity.
  // Every flag this rank writes for a peer goes through here (records: writeRecord, then ring).
  void publish(const Peer& p, SharedFlag& flag, uint32_t value) {
    flag.publish(value);
    ring(p);
  }
  // Wakes p if it sleeps in waitForActivity: after anything this rank published to it.
  void ring(const Peer& p);
  // Fails every pending request involving p, and every later one, with `why`. Records already
  // published are delivered first (unless the ring itself is what failed): eager messages that
  // arrived stay receivable.
  void failPeer(Peer& p, std::string why, bool drainFirst = true);
  void shutDown(Deadline deadline) noexcept;

  // shm_send.cc: the sender's state machine.
  bool tryStart(Peer& p, Op* op);
  bool flushQueued(Peer& p);
  bool collectAcks(Peer& p);
  bool serveSends(Peer& p);
  bool stream(Peer& p);
  uint32_t takeTicket(Peer& p, Op* op);
  void returnTicket(Peer& p, Op* op);
  TicketState revoke(Peer& p, Op* op);
  void cancelSend(Op* op);

  // shm_recv.cc: draining the record ring and matching.
  bool drainRecords(Peer& p);
  void deliver(Peer& p, const RecordHeader& h, const uint8_t* payload);
  void matchLarge(Peer& p, Op* op, uint64_t size, uint64_t address, uint32_t ticket,
                  uint32_t generation);
  void cancelRecv(Op* op);

  // shm_fetch.cc: taking large messages.
  Fetch fetchFor(const Peer& p) const;
  bool fetchStep(Peer& p);
  void fetchDirect(Peer& p, Op* op, size_t& budget);
  void fetchCma(Peer& p, Op* op, size_t& budget);
  bool fetchPull(Peer& p, Op* op);
  // Ends the ticket of op's message as kTicketTaken / kTicketDeclined (the sender's send then
  // completes or fails) and tells the sender. Returns false when the sender had revoked it.
  bool finishTicket(Peer& p, Op* op, TicketState outcome);
  // Finishes a matched receive as Done (ticket taken) or, when the sender revoked it, Failed.
  void finishFetch(Peer& p, Op* op);
  // Fails a matched receive with `why` and declines its ticket.
  void abandonFetch(Peer& p, Op* op, const std::string& why);

  ShmSegment& segment_;
  ShmTransportOptions options_;
  MailboxLayout layout_;
  int me_ = 0;               // local index
  int rank_ = 0;             // global rank
  std::vector<int> ranks_;   // global rank of each local index, ascending
  std::vector<Peer> peers_;  // by local index
  std::vector<std::unique_ptr<Op>> opStore_;
  std::vector<Op*> freeOps_;
  std::vector<std::unique_ptr<Unexpected>> unexpectedStore_;
  std::vector<Unexpected*> freeUnexpected_;
  ProcessWatch watch_;
  std::vector<int> exited_;
  std::string lost_;  // the first peer whose process exited, for lostPeer()
  uint32_t progressCalls_ = 0;
  Clock::time_point nextCheck_{};
  bool cmaRefused_ = false;  // kAuto only: the kernel refused CMA once; pull from now on
  int doorbell_ = -1;        // this rank's doorbell: an abstract datagram socket; -1: none
  bool closed_ = false;
};

}  // namespace weft::shm
