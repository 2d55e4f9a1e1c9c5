// libFuzzer target: what the transports read from their peers. The UCX peer record (exchanged
// at connection time) must be rejected with weft::Error when malformed; the shm transport's
// mailbox record headers, read from memory another process writes, must be either refused by
// recordProblem or lie wholly inside what was published and inside the ring.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "lib/base/error.hpp"
#include "transports/shm/mailbox.hpp"
#include "transports/ucx/peer_info.hpp"

namespace {

constexpr uint32_t kRingBytes = 4096;

// Walks the records of a ring filled with the input, as the receiver does.
void walkRecords(const uint8_t* data, size_t size) {
  using namespace weft::shm;
  static uint8_t ring[kRingBytes];
  std::memset(ring, 0, sizeof ring);
  uint32_t tail = 0, head = 0;
  if (size >= 8) {
    std::memcpy(&tail, data, 4);
    std::memcpy(&head, data + 4, 4);
    data += 8;
    size -= 8;
  }
  std::memcpy(ring, data, size < kRingBytes ? size : kRingBytes);
  for (int records = 0; records < 1024 && tail != head; ++records) {
    const uint32_t available = head - tail;
    if (available < kRecordHeaderBytes) return;
    const uint32_t offset = tail & (kRingBytes - 1);
    if (offset + kRecordHeaderBytes > kRingBytes) return;  // records are 64-byte aligned
    RecordHeader h;
    std::memcpy(&h, ring + offset, sizeof h);
    if (recordProblem(h, tail, available, kRingBytes) != nullptr) return;
    // Accepted: the record lies inside the published bytes and the ring, and so does an eager
    // payload.
    if (h.recordBytes > available || offset + h.recordBytes > kRingBytes) __builtin_trap();
    if (h.kind == kRecordEager && kRecordHeaderBytes + h.size > h.recordBytes) __builtin_trap();
    if (h.kind == kRecordLarge && h.ticket >= kTickets) __builtin_trap();
    tail += h.recordBytes;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::span<const uint8_t> rest(data + 1, size - 1);
  if (data[0] & 1) {
    walkRecords(rest.data(), rest.size());
  } else {
    try {
      (void)weft::ucx::decodePeerInfo(rest, 0, 1, 4);
    } catch (const weft::Error&) {
    }
  }
  return 0;
}
