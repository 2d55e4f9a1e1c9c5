// How the enqueue layer numbers transport tags (kTagBits = 44 bits): a collective's messages
// carry (its sequence number mod 2^20) << 23 | message index; point-to-point messages set bit 43
// and number the messages of each ordered pair. WEFT_CHECK's messages use the upper half of a
// collective's message indices (bit 22): schedules stay far below 2^22 messages per peer (see
// the tuner's chunk sizes).
#pragma once

#include <cstdint>

namespace weft {

inline constexpr int kMessageBits = 23;
inline constexpr uint64_t kCollectiveSeqMask = (uint64_t{1} << 20) - 1;
inline constexpr uint64_t kCheckIndex = uint64_t{1} << 22;
inline constexpr uint64_t kPointToPointBit = uint64_t{1} << 43;
inline constexpr uint64_t kPointToPointSeqMask = kPointToPointBit - 1;

}  // namespace weft
