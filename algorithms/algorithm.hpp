// The algorithm registry: every schedule builder is an entry with an id, a name, the
// collectives it serves and a one-line description (weft-topo --algorithms prints them).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "algorithms/schedule.hpp"

namespace weft {

// What every rank of a collective agrees on, plus this rank's place in it.
struct CollectiveShape {
  Collective collective = Collective::AllReduce;
  int nranks = 1;
  int rank = 0;
  // The API's count argument: elements per rank for AllGather (send), ReduceScatter (receive),
  // AlltoAll, Gather and Scatter (per block); the whole buffer for the others.
  uint64_t count = 0;
  uint32_t elemSize = 1;
  int root = 0;
  // The caller's buffers overlap as NCCL's in-place convention says (sendbuff == recvbuff, or
  // the rank's block of the larger buffer for AllGather/ReduceScatter/Gather/Scatter).
  bool inPlace = false;
  uint64_t chunkBytes = uint64_t{1} << 20;
};

enum class AlgorithmId : uint8_t { Ring, Chain, Pairwise, Direct };

struct Algorithm {
  AlgorithmId id;
  const char* name;
  uint32_t collectives;  // bit (1 << Collective)
  const char* description;
  Schedule (*build)(const CollectiveShape& shape);

  bool serves(Collective c) const { return (collectives >> static_cast<int>(c)) & 1u; }
};

std::span<const Algorithm> algorithmRegistry();
const Algorithm* findAlgorithm(Collective collective, std::string_view name);

// Builders (one family per file).
Schedule buildRing(const CollectiveShape& shape);      // ring.cc: AllReduce, AllGather, ReduceScatter
Schedule buildChain(const CollectiveShape& shape);     // chain.cc: Broadcast, Reduce
Schedule buildPairwise(const CollectiveShape& shape);  // pairwise.cc: AlltoAll
Schedule buildDirect(const CollectiveShape& shape);    // direct.cc: Gather, Scatter

// Point to point (p2p.cc): one message of `bytes` to or from `peer`.
Schedule buildSend(int peer, uint64_t bytes);
Schedule buildRecv(int peer, uint64_t bytes);
// A send to oneself matched with a receive from oneself in the same group: a copy.
Schedule buildSelfCopy(uint64_t bytes);

}  // namespace weft
