// Pipelined reduce toward, and broadcast from, the root of one tree over a range of the buffer:
// the schedule half of the tree, k-nomial and binomial families (tree_pattern.hpp is the rank
// arithmetic half).
#pragma once

#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/partition.hpp"

namespace weft {

// This rank's place in one tree, in real ranks.
struct TreeRole {
  int parent = -1;  // -1: the root
  std::vector<int> children;
};

enum class TreeFlow {
  Reduce,     // partial sums flow up; the root's receive buffer gets the result
  Broadcast,  // the root's send buffer flows down into every receive buffer
  AllReduce,  // up, then the result back down; chunk j goes down as soon as it is reduced
};

// Appends the steps of `flow` over elements `range` of the caller's buffers, chunked by
// shape.chunkBytes. Every chunk moves independently, so chunks pipeline through the tree.
// Receives from children land in a window of scratch slots (kTreeWindow per child). Ranks must
// append their trees in the same order (message tags are per peer, in step order).
void appendTreeFlow(ScheduleBuilder& b, const CollectiveShape& shape, TreeFlow flow,
                    const TreeRole& role, Range range);

inline constexpr uint64_t kTreeWindow = 4;

// The same flow one chunk at a time, so that several trees' chunks can be interleaved
// (packed_trees.cc): the constructor reserves the scratch (and appends the root's copy of a
// broadcast); appendChunk(j) must be called for j = 0, 1, ..., chunks() - 1 in order.
class TreePipeline {
 public:
  TreePipeline(ScheduleBuilder& b, const CollectiveShape& shape, TreeFlow flow,
               const TreeRole& role, Range range);
  // The range cut into the given chunks (consecutive sub-ranges of `range`; an empty one appends
  // nothing) instead of chunks of shape.chunkBytes, with `window` scratch slots per child.
  TreePipeline(ScheduleBuilder& b, const CollectiveShape& shape, TreeFlow flow,
               const TreeRole& role, Range range, std::vector<Range> chunks, uint64_t window);
  uint64_t chunks() const { return chunks_; }
  void appendChunk(uint64_t j);

 private:
  Range chunk(uint64_t j) const;

  ScheduleBuilder& b_;
  const CollectiveShape& s_;
  TreeFlow flow_;
  TreeRole role_;
  Range range_;
  std::vector<Range> given_;  // explicit chunks, or empty: chunkOf(range_, chunks_, j)
  uint64_t chunks_ = 0, maxChunk_ = 0, window_ = 0, slotBase_ = 0, partialBase_ = 0;
  bool scratchPartials_ = false;
  std::vector<std::vector<StepId>> consumed_;
};

// Maps a tree in virtual ranks (v = (rank - root) mod n) to real ranks.
TreeRole realRole(int parent, const std::vector<int>& children, int root, int nranks);

TreeFlow treeFlowFor(Collective c);

}  // namespace weft

namespace weft {

// Allreduce, broadcast or reduce pipelined through a k-nomial tree of `radix` rooted at the
// collective's root (rank 0 for allreduce). knomial.cc; binomial.cc uses radix 2.
Schedule buildKnomialTree(const CollectiveShape& shape, int radix);

}  // namespace weft
