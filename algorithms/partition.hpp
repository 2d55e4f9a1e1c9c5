// How collectives cut buffers into blocks (one per rank) and blocks into pipeline chunks.
#pragma once

#include <algorithm>
#include <cstdint>

namespace weft {

struct Range {
  uint64_t offset = 0;  // elements
  uint64_t count = 0;   // elements
};

// Block b of `total` elements cut into `parts` nearly equal blocks: the first total % parts
// blocks have one element more. Blocks may be empty when total < parts.
inline Range blockRange(uint64_t total, uint64_t parts, uint64_t b) {
  const uint64_t base = total / parts, extra = total % parts;
  return {b * base + std::min(b, extra), base + (b < extra ? 1 : 0)};
}

// The block (of blockRange's) that element e < total lies in.
inline uint64_t blockOf(uint64_t total, uint64_t parts, uint64_t e) {
  const uint64_t base = total / parts, extra = total % parts;
  const uint64_t longer = extra * (base + 1);  // elements in the blocks with one more
  return e < longer ? e / (base + 1) : extra + (e - longer) / base;
}

// Number of pipeline chunks for blocks of up to `maxCount` elements of `elemSize` bytes, so
// that a chunk is at most `chunkBytes` (and there is always at least one).
inline uint64_t chunkCount(uint64_t maxCount, uint32_t elemSize, uint64_t chunkBytes) {
  const uint64_t perChunk = std::max<uint64_t>(1, chunkBytes / elemSize);
  return std::max<uint64_t>(1, (maxCount + perChunk - 1) / perChunk);
}

// Chunk j of a block: a sub-range in the same element coordinates as the block.
inline Range chunkOf(Range block, uint64_t chunks, uint64_t j) {
  Range r = blockRange(block.count, chunks, j);
  return {block.offset + r.offset, r.count};
}

}  // namespace weft
