// K-nomial trees (radix kKnomialRadix): broadcast and reduce pipelined through the tree, and
// allreduce as a k-nomial reduce to rank 0 followed by a k-nomial broadcast, chunk by chunk (a
// chunk goes back down as soon as rank 0 has reduced it). Fewer levels than a binary tree
// (log_k n), at the price of k-1 children per inner rank.
#include "algorithms/tree_pattern.hpp"
#include "algorithms/tree_schedule.hpp"

namespace weft {

Schedule buildKnomialTree(const CollectiveShape& s, int radix) {
  ScheduleBuilder b;
  const int n = s.nranks;
  const TreeFlow flow = treeFlowFor(s.collective);
  const int root = flow == TreeFlow::AllReduce ? 0 : s.root;
  const int v = (s.rank - root + n) % n;
  const TreeLinks links = knomialTree(n, v, radix);
  appendTreeFlow(b, s, flow, realRole(links.parent, links.children, root, n), {0, s.count});
  return std::move(b).finish();
}

Schedule buildKnomial(const CollectiveShape& s) {
  return buildKnomialTree(s, kKnomialRadix);
}

}  // namespace weft
