// The layout of one mailbox of the shm transport: the shared memory that carries messages from
// local rank `from` to local rank `to` (ShmSegment::mailbox(from, to)). Both ranks write it, but
// every word has exactly one writer. Memory starts zeroed, which is the initial state of
// everything here; counters only grow (wrapping modulo 2^32).
//
//   control (one SharedFlag per line, then the ticket words)
//     recordHead  sender    bytes of records published into the record ring
//     recordTail  receiver  bytes of records consumed
//     acks        receiver  tickets finished (taken or declined): the sender rescans on change
//     pull        receiver  pull requests; payload: PullRequest (copy through the mailbox)
//     dataHead    sender    bytes streamed into the data ring
//     dataTail    receiver  bytes drained from the data ring
//     broken      sender    non-zero once the sender broke the pair (cancel of a send)
//     tickets[]   both      per large send in flight: generation and state (TicketState)
//   record ring  (power of two) records of 64-byte multiples: eager messages inline, large ones
//                as (size, address, ticket); a record never straddles the end (kPad fills it)
//   data ring    (power of two) the bytes of one large message at a time, when the receiver
//                pulls it through the mailbox instead of copying it from the sender directly
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "transports/shm/flag.hpp"

namespace weft::shm {

// Large sends in flight per ordered pair; more wait on the sender's side for a free ticket.
inline constexpr uint32_t kTickets = 256;
inline constexpr uint32_t kRecordAlign = 64;

// A ticket word: generation << 3 | state. The sender announces (kAnnounced); the receiver
// finishes it (kTaken: data copied, or kDeclined: receive withdrawn) or, copying straight from
// the sender's memory (same process), holds it in kCopying for the length of one memcpy; the
// sender withdraws it (kRevoked) only from kAnnounced, so it never frees a buffer under a copy.
enum TicketState : uint32_t {
  kTicketRevoked = 0,  // also a never-used ticket (zeroed memory)
  kTicketAnnounced = 1,
  kTicketCopying = 2,
  kTicketTaken = 3,
  kTicketDeclined = 4,
};
inline constexpr uint32_t kGenerationMask = (uint32_t{1} << 29) - 1;
inline uint32_t ticketWord(uint32_t generation, TicketState state) {
  return generation << 3 | state;
}
inline TicketState ticketState(uint32_t word) {
  return static_cast<TicketState>(word & 7);
}
inline uint32_t ticketGeneration(uint32_t word) {
  return word >> 3;
}

// What the receiver asks the sender to stream through the data ring.
struct PullRequest {
  uint32_t ticket;
  uint32_t generation;
};

struct MailboxControl {
  SharedFlag recordHead;
  SharedFlag recordTail;
  SharedFlag acks;
  SharedFlag pull;
  SharedFlag dataHead;
  SharedFlag dataTail;
  SharedFlag broken;
  SharedFlag reserved;
  std::atomic<uint32_t> tickets[kTickets];
};
static_assert(std::atomic<uint32_t>::is_always_lock_free);
static_assert(sizeof(PullRequest) <= sizeof(SharedFlag::payload));

enum RecordKind : uint32_t { kRecordPad = 1, kRecordEager = 2, kRecordLarge = 3 };

// The start of every record; an eager record's payload follows it.
struct RecordHeader {
  uint32_t recordBytes;  // the whole record, a multiple of kRecordAlign
  uint32_t kind;         // RecordKind
  uint64_t tag;
  uint64_t size;        // message bytes
  uint64_t address;     // kRecordLarge: the sender's buffer, in the sender's address space
  uint32_t ticket;      // kRecordLarge
  uint32_t generation;  // kRecordLarge
};
inline constexpr size_t kRecordHeaderBytes = sizeof(RecordHeader);
static_assert(kRecordHeaderBytes == 40);

inline uint32_t recordBytesFor(size_t payload) {
  return static_cast<uint32_t>((kRecordHeaderBytes + payload + kRecordAlign - 1) / kRecordAlign *
                               kRecordAlign);
}

// Where the parts of a mailbox of `mailboxBytes` go, and the largest eager payload.
struct MailboxLayout {
  uint64_t recordsOffset = 0, recordsBytes = 0;
  uint64_t dataOffset = 0, dataBytes = 0;
  size_t eagerLimit = 0;

  // Smallest mailbox the transport accepts (4 KiB for each ring).
  static constexpr uint64_t kMinBytes = 12 << 10;
  // Throws weftInvalidArgument when mailboxBytes < kMinBytes. `eagerBytes` is clamped so that
  // an eager record takes at most a quarter of the record ring.
  static MailboxLayout make(uint64_t mailboxBytes, size_t eagerBytes);
};

// mailbox(from, to) seen through its layout.
struct Mailbox {
  MailboxControl* control = nullptr;
  uint8_t* records = nullptr;
  uint32_t recordsMask = 0;  // ring bytes - 1
  uint8_t* data = nullptr;
  uint32_t dataMask = 0;

  Mailbox() = default;
  Mailbox(uint8_t* base, const MailboxLayout& layout);
  std::atomic<uint32_t>& ticket(uint32_t index) const { return control->tickets[index]; }
};

// The sender's end of the record ring: `head` is what it published, `tailSeen` the receiver's
// tail it last read. Writes one record (and a pad before it when it would straddle the end) and
// publishes it; returns false, writing nothing, when the ring lacks space.
bool writeRecord(const Mailbox& box, uint32_t& head, uint32_t& tailSeen, const RecordHeader& header,
                 const void* payload);

// Why a record read at `tail` (with `available` bytes published after it) is malformed, or
// nullptr when it is well formed.
const char* recordProblem(const RecordHeader& header, uint32_t tail, uint32_t available,
                          uint32_t ringBytes);

}  // namespace weft::shm
