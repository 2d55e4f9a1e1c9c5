#include "transports/shm/mailbox.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "lib/base/error.hpp"

namespace weft::shm {
namespace {

// The control lines and tickets, rounded up so that the rings start on their own lines.
constexpr uint64_t kControlBytes = (sizeof(MailboxControl) + 511) / 512 * 512;
// Past this the record ring gains nothing (records are drained at once); the rest goes to data.
constexpr uint64_t kMaxRecordBytes = 64 << 10;

}  // namespace

MailboxLayout MailboxLayout::make(uint64_t mailboxBytes, size_t eagerBytes) {
  if (mailboxBytes < kMinBytes) {
    fail(weftInvalidArgument,
         "the shm transport needs mailboxes of at least {} bytes per pair of local ranks, the "
         "segment has {}",
         kMinBytes, mailboxBytes);
  }
  MailboxLayout l;
  const uint64_t rings = mailboxBytes - kControlBytes;
  l.recordsOffset = kControlBytes;
  l.recordsBytes = std::min(std::bit_floor(rings / 2), kMaxRecordBytes);
  l.dataOffset = l.recordsOffset + l.recordsBytes;
  l.dataBytes = std::min<uint64_t>(std::bit_floor(rings - l.recordsBytes), uint64_t{1} << 30);
  l.eagerLimit = std::min<size_t>(eagerBytes, l.recordsBytes / 4 - kRecordHeaderBytes);
  return l;
}

Mailbox::Mailbox(uint8_t* base, const MailboxLayout& layout)
    : control(reinterpret_cast<MailboxControl*>(base)),
      records(base + layout.recordsOffset),
      recordsMask(static_cast<uint32_t>(layout.recordsBytes - 1)),
      data(base + layout.dataOffset),
      dataMask(static_cast<uint32_t>(layout.dataBytes - 1)) {}

bool writeRecord(const Mailbox& box, uint32_t& head, uint32_t& tailSeen, const RecordHeader& header,
                 const void* payload) {
  const uint32_t ringBytes = box.recordsMask + 1;
  const uint32_t need = header.recordBytes;
  const uint32_t toEnd = ringBytes - (head & box.recordsMask);
  const uint32_t pad = toEnd < need ? toEnd : 0;
  if (ringBytes - (head - tailSeen) < pad + need) {
    tailSeen = box.control->recordTail.load();
    if (ringBytes - (head - tailSeen) < pad + need) return false;
  }
  if (pad != 0) {
    RecordHeader filler{};
    filler.recordBytes = pad;
    filler.kind = kRecordPad;
    std::memcpy(box.records + (head & box.recordsMask), &filler, sizeof filler);
    head += pad;
  }
  uint8_t* at = box.records + (head & box.recordsMask);
  std::memcpy(at, &header, sizeof header);
  if (header.kind == kRecordEager && header.size != 0) {
    std::memcpy(at + kRecordHeaderBytes, payload, header.size);
  }
  head += need;
  box.control->recordHead.publish(head);
  return true;
}

const char* recordProblem(const RecordHeader& header, uint32_t tail, uint32_t available,
                          uint32_t ringBytes) {
  const uint32_t bytes = header.recordBytes;
  if (bytes == 0 || bytes % kRecordAlign != 0) return "record size not a multiple of 64";
  if (bytes > available) return "record longer than what was published";
  if (bytes > ringBytes - (tail & (ringBytes - 1))) return "record straddles the end of the ring";
  switch (header.kind) {
    case kRecordPad: return nullptr;
    case kRecordEager:
      return header.size > bytes - kRecordHeaderBytes ? "eager payload longer than its record"
                                                      : nullptr;
    case kRecordLarge:
      if (header.ticket >= kTickets) return "ticket out of range";
      return header.size == 0 ? "large message of 0 bytes" : nullptr;
    default: return "unknown record kind";
  }
}

}  // namespace weft::shm
