// How a (sender rank, transport tag) pair becomes one 64-bit UCP tag, so that a receive matches
// exactly one peer and one tag with a full mask:
//
//   63            44 43                                         0
//   +---------------+--------------------------------------------+
//   |  sender rank  |              tag (kTagBits = 44)           |
//   +---------------+--------------------------------------------+
//
// Pure functions: tests check them without UCX.
#pragma once

#include <cstdint>

#include "transports/transport.hpp"

namespace weft::ucx {

inline constexpr int kRankBits = 64 - kTagBits;  // 20
inline constexpr int64_t kMaxRanks = int64_t{1} << kRankBits;
inline constexpr uint64_t kFullTagMask = ~uint64_t{0};

static_assert(kRankBits == 20, "the UCP tag splits into 20 rank bits and 44 tag bits");

// `rank` must be in [0, kMaxRanks) and `tag` within kTagMask; callers check.
constexpr uint64_t packTag(int rank, uint64_t tag) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(rank)) << kTagBits) | (tag & kTagMask);
}
constexpr int tagSender(uint64_t ucpTag) {
  return static_cast<int>(ucpTag >> kTagBits);
}
constexpr uint64_t tagUser(uint64_t ucpTag) {
  return ucpTag & kTagMask;
}

}  // namespace weft::ucx
