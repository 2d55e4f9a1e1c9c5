// The messages between a rank and the bootstrap root, after the handshake:
//   rank -> root   Hello   rank u32 | nranks u32 | waitMs u32 | pid u64 | listen address |
//                          host identity (u32 length + bytes)
//   root -> rank   Table   communicator id 16 bytes | nranks u32 | per rank: listen address |
//                          pid u64 | host identity
//   root -> rank   Error   weftResult_t u32 | message (u32 length + bytes)
// waitMs is how long the rank will wait for the table; the root answers with an Error naming
// the missing ranks shortly before that, so the rank's timeout can say who never came.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/bootstrap/handshake.hpp"
#include "lib/bootstrap/socket.hpp"

namespace weft {

// What every rank learns about every other.
struct RankInfo {
  SocketAddress address;  // its ring listener
  std::string hostId;     // equal for ranks that can share memory (host_id.hpp)
  int64_t pid = 0;
};

struct Hello {
  int rank = -1;
  int nranks = 0;
  uint32_t waitMs = 0;
  RankInfo info;
};

struct RankTable {
  CommId commId{};
  std::vector<RankInfo> ranks;
};

std::vector<uint8_t> encodeHello(const Hello& hello);
// Throws weftRemoteError naming `peer` when malformed.
Hello decodeHello(std::span<const uint8_t> payload, std::string_view peer);

std::vector<uint8_t> encodeTable(const RankTable& table);
RankTable decodeTable(std::span<const uint8_t> payload, std::string_view peer);

std::vector<uint8_t> encodeErrorMessage(weftResult_t result, std::string_view message);

// "rank 3", "ranks 0, 2-5, 7".
std::string formatRanks(std::span<const int> sortedRanks);

}  // namespace weft
