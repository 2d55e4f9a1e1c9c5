#include "lib/tuner/search.hpp"

#include <algorithm>

#include "lib/base/error.hpp"

namespace weft {

uint64_t tagSafeChunk(uint64_t chunkBytes, uint64_t bytes) {
  return std::max(chunkBytes, bytes / kMaxChunksPerBuffer + 1);
}

std::vector<uint64_t> chunkCandidates(const Algorithm& a, const CollectiveShape& shape) {
  if (!a.usesChunks(shape.collective)) return {shape.chunkBytes};
  std::vector<uint64_t> out;
  for (uint64_t chunk = uint64_t{16} << 10; chunk <= uint64_t{16} << 20; chunk *= 2) {
    CollectiveShape s = shape;
    s.chunkBytes = chunk;
    out.push_back(chunk);
    if (pipelineChunks(a, s) < 2) break;  // larger chunks change nothing
  }
  return out;
}

std::vector<Candidate> priceAlgorithms(const SearchRequest& r) {
  std::vector<Candidate> out;
  const uint64_t bytes = r.count * r.elemSize;
  // The model's hosts: rank q on host q / ranksPerHost (algorithms/cost).
  std::vector<int> hosts;
  if (r.model.ranksPerHost < r.model.nranks)
    for (int q = 0; q < r.model.nranks; ++q) hosts.push_back(q / std::max(1, r.model.ranksPerHost));
  for (const Algorithm* a : r.algorithms) {
    CollectiveShape shape;
    shape.collective = r.collective;
    shape.nranks = r.model.nranks;
    shape.count = r.count;
    shape.elemSize = r.elemSize;
    shape.hostOfRank = hosts;
    shape.chunkBytes = r.chunkBytes ? r.chunkBytes : uint64_t{512} << 10;
    std::vector<uint64_t> chunks =
        r.chunkBytes ? std::vector<uint64_t>{r.chunkBytes} : chunkCandidates(*a, shape);
    // Channels only divide chunked pipelines.
    std::vector<int> channels{1};
    if (supportsChannels(r.collective) && a->usesChunks(r.collective) && r.model.nranks > 1)
      channels.push_back(2);
    Candidate best;
    best.algorithm = a;
    best.seconds = -1;
    // A pipeline's time falls with the chunk size while per-message costs dominate and rises
    // once the fill does: the search walks up the chunk sizes and stops after two in a row that
    // are slower than the best so far (what keeps 4096-rank trees affordable in weft-sim; one
    // alone can be a ripple of how the chunks divide the blocks).
    int slower = 0;
    for (uint64_t chunk : chunks) {
      double here = -1;
      const double bestBefore = best.seconds;
      for (int ch : channels) {
        shape.chunkBytes = tagSafeChunk(chunk, bytes);
        shape.channels = ch;
        const double t = simulate(*a, shape, r.model).seconds;
        if (here < 0 || t < here) here = t;
        if (best.seconds < 0 || t < best.seconds) {
          best.seconds = t;
          best.chunkBytes = shape.chunkBytes;
          best.channels = ch;
        }
      }
      slower = bestBefore >= 0 && here > bestBefore ? slower + 1 : 0;
      if (slower == 2) break;
    }
    out.push_back(best);
  }
  return out;
}

Candidate cheapest(const std::vector<Candidate>& priced) {
  if (priced.empty()) fail(weftInternalError, "the tuner has no algorithm to choose from");
  const Candidate* best = &priced.front();
  for (const Candidate& c : priced)
    if (c.seconds < best->seconds) best = &c;
  return *best;
}

}  // namespace weft
