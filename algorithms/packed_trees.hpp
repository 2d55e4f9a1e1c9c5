// Schedules over a packing of weighted spanning trees (Blink): the buffer (for allgather, each
// rank's block) is cut into one part per tree, in proportion to the trees' weights, and each
// part flows through its own tree, all trees at once, pipelined in rounds: round j moves chunk j
// of every part, the chunks again in proportion to the weights (a round is shape.chunkBytes of
// the buffer; the first and last few are smaller). The trees come from the topology
// (lib/topology/packing.hpp); this file only turns them into steps.
#pragma once

#include <span>
#include <vector>

#include "algorithms/algorithm.hpp"

namespace weft {

struct WeightedTree {
  std::vector<int> parent;  // per rank; -1 at the tree's root
  double weight = 0;        // share of the buffer (allgather: of its root's block)
  bool operator==(const WeightedTree&) const = default;
};

// Broadcast and Reduce: every tree rooted at shape.root. AllReduce: any roots (each part is
// reduced to its tree's root and broadcast back down). AllGather: trees rooted at every rank;
// each rank's block is cut over the trees rooted at it, by their weights. Throws Error
// (weftInternalError) when a tree is not a spanning tree of shape.nranks ranks or has the wrong
// root.
Schedule buildPackedTrees(const CollectiveShape& shape, std::span<const WeightedTree> trees);

}  // namespace weft
