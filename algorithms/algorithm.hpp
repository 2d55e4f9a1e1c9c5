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
  // Parallel channels (allreduce, broadcast, reduce): the buffer is cut into this many
  // contiguous parts, each running its own copy of the algorithm at the same time.
  int channels = 1;
  // The host of every rank (any equal ids: same host), for algorithms that treat ranks on one
  // host and on other hosts differently (hierarchical); empty: every rank on one host. Fixed
  // for a communicator (it outlives the shape), so not part of ScheduleCache's key.
  std::span<const int> hostOfRank{};
  // The ring's order of ranks (ring.cc): ringOrder[i] is followed by ringOrder[i + 1]; empty
  // for 0 -> 1 -> ... -> n-1. From the topology (lib/topology/placement.hpp), so that a ring
  // crosses packages and hosts the fewest times. Not owned: the communicator keeps it.
  std::span<const int> ringOrder = {};
};

enum class AlgorithmId : uint8_t {
  Ring,
  Chain,
  Pairwise,
  Direct,
  Tree,
  HalvingDoubling,
  RecursiveDoubling,
  Knomial,
  Binomial,
  ScatterAllGather,
  Bruck,
  Hierarchical,
};

// Which ranks run the same schedule up to a relabeling of ranks; the cost model simulates one
// representative per class (algorithms/cost). Rotation: rank r+s runs rank r's schedule with
// every peer shifted by s. Xor: for a power-of-two rank count, rank r^s runs rank r's with
// every peer xor-ed with s. (Exact when blocks are equal; uneven blocks differ by one element.)
enum class Symmetry : uint8_t { None, Rotation, Xor };

struct Algorithm {
  AlgorithmId id;
  const char* name;
  uint32_t collectives;  // bit (1 << Collective)
  const char* description;
  Schedule (*build)(const CollectiveShape& shape);
  Symmetry symmetry;
  uint32_t chunked;  // the collectives whose schedules use chunkBytes (bit (1 << Collective))

  bool serves(Collective c) const { return (collectives >> static_cast<int>(c)) & 1u; }
  bool usesChunks(Collective c) const { return (chunked >> static_cast<int>(c)) & 1u; }
};

std::span<const Algorithm> algorithmRegistry();
const Algorithm* findAlgorithm(Collective collective, std::string_view name);
const Algorithm* findAlgorithm(AlgorithmId id);

// Channels apply to these collectives (their buffers are one contiguous range per rank).
bool supportsChannels(Collective c) noexcept;
// The algorithm's schedule for `shape`, with shape.channels parts side by side (channels.cc).
Schedule buildSchedule(const Algorithm& algorithm, const CollectiveShape& shape);

// Builders (one family per file).
Schedule buildRing(const CollectiveShape& shape);   // ring.cc: AllReduce, AllGather, ReduceScatter
Schedule buildChain(const CollectiveShape& shape);  // chain.cc: Broadcast, Reduce
Schedule buildPairwise(const CollectiveShape& shape);  // pairwise.cc: AlltoAll
Schedule buildDirect(const CollectiveShape& shape);    // direct.cc: Gather, Scatter
Schedule buildTree(const CollectiveShape& shape);      // tree.cc: AllReduce, Broadcast, Reduce
// halving_doubling.cc: AllReduce, ReduceScatter
Schedule buildHalvingDoubling(const CollectiveShape& shape);
// recursive_doubling.cc: AllReduce, AllGather
Schedule buildRecursiveDoubling(const CollectiveShape& shape);
Schedule buildKnomial(const CollectiveShape& shape);  // knomial.cc: AllReduce, Broadcast, Reduce
// binomial.cc: Broadcast, Reduce, Gather, Scatter
Schedule buildBinomial(const CollectiveShape& shape);
// scatter_allgather.cc: Broadcast
Schedule buildScatterAllGather(const CollectiveShape& shape);
Schedule buildBruck(const CollectiveShape& shape);  // bruck.cc: AllGather, AlltoAll
// hierarchical.cc: AllReduce, AllGather over shape.hostOfRank (intra-host reduce or gather,
// inter-host rings, intra-host broadcast)
Schedule buildHierarchical(const CollectiveShape& shape);

inline constexpr int kKnomialRadix = 4;

// Point to point (p2p.cc): one message of `bytes` to or from `peer`.
Schedule buildSend(int peer, uint64_t bytes);
Schedule buildRecv(int peer, uint64_t bytes);
// A send to oneself matched with a receive from oneself in the same group: a copy.
Schedule buildSelfCopy(uint64_t bytes);

}  // namespace weft
