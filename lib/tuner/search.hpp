// The tuner's search: for a collective, a size and a machine, every allowed algorithm priced at
// its best chunk size and channel count by the cost model (algorithms/cost). Pure: the runtime
// tuner, weft-sim, weft-topo and the tests all call this one function, so what they print and
// what the runtime picks cannot disagree.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/cost/simulator.hpp"

namespace weft {

struct Candidate {
  const Algorithm* algorithm = nullptr;
  uint64_t chunkBytes = 0;
  int channels = 1;
  double seconds = 0;  // predicted
};

struct SearchRequest {
  Collective collective = Collective::AllReduce;
  uint64_t count = 0;  // the API's count argument
  uint32_t elemSize = 4;
  MachineModel model;
  std::vector<const Algorithm*> algorithms;  // those allowed
  uint64_t chunkBytes = 0;                   // fixed chunk size; 0: searched
};

// The chunk sizes tried for chunked schedules: powers of two from 16 KiB to 16 MiB, the ones
// that leave at least two chunks in the longest pipeline, plus the smallest that leaves one.
// priceAlgorithms walks them upward and stops after two in a row slower than the best so far.
std::vector<uint64_t> chunkCandidates(const Algorithm& algorithm, const CollectiveShape& shape);

// One entry per allowed algorithm (its best configuration), in the order given. Ties keep the
// smaller chunk and fewer channels.
std::vector<Candidate> priceAlgorithms(const SearchRequest& request);

// The cheapest of priceAlgorithms (the first of equals). Requires at least one algorithm.
Candidate cheapest(const std::vector<Candidate>& priced);

// Chunks are at least this large so that no schedule nears the executor's message-tag space
// (2^23 messages per peer and operation).
inline constexpr uint64_t kMaxChunksPerBuffer = uint64_t{1} << 20;
uint64_t tagSafeChunk(uint64_t chunkBytes, uint64_t bytes);

}  // namespace weft
