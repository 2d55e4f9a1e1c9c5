// How a (sender rank, transport tag) pair becomes one 64-bit UCP tag, so that a receive matches
// exactly one peer and one tag with a full mask:
//
//   63            44 43                                         0
//   +---------------+--------------------------------------------+
//   |  sender rank  |              tag (kTagBits = 44)           |
//   +---------------+--------------------------------------------+
//
// A worker shared by several communicators (split children, splitShare=1) gives each a context
// id. The sender field then holds the id above the rank, which needs only rankBitsFor(nranks)
// bits; context 0 (the worker's creator) leaves the layout above unchanged:
//
//   63        44+b  44+b-1      44 43                            0
//   +-------------+---------------+-------------------------------+
//   | context id  | sender rank   |       tag (kTagBits = 44)     |
//   +-------------+---------------+-------------------------------+   b = rankBitsFor(nranks)
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
// The bits ranks 0..nranks-1 need (0 for one rank).
constexpr int rankBitsFor(int64_t nranks) {
  int bits = 0;
  while ((int64_t{1} << bits) < nranks) ++bits;
  return bits;
}
// The largest context id the sender field can carry above ranks of `rankBits` bits.
constexpr uint32_t maxContextFor(int rankBits) {
  return static_cast<uint32_t>((uint64_t{1} << (kRankBits - rankBits)) - 1);
}
// `context` must be at most maxContextFor(rankBits) and `rank` below 2^rankBits; callers check.
constexpr uint64_t packTag(uint32_t context, int rankBits, int rank, uint64_t tag) {
  const uint64_t above = context == 0 ? 0 : uint64_t{context} << (kTagBits + rankBits);
  return above | packTag(rank, tag);
}
constexpr int tagSender(uint64_t ucpTag) {
  return static_cast<int>(ucpTag >> kTagBits);
}
constexpr uint64_t tagUser(uint64_t ucpTag) {
  return ucpTag & kTagMask;
}

}  // namespace weft::ucx
