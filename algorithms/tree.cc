// Double binary tree (NCCL's scheme): the buffer is cut in two halves, each pipelined through
// its own binary tree; tree 1 mirrors (even n) or shifts (odd n) tree 0, so leaves of one are
// the inner ranks of the other and every rank sends and receives in both directions at once.
//
// Allreduce: each half is reduced to its tree's root and broadcast back down, chunk by chunk.
// Broadcast and reduce: tree 0 is rooted at the collective's root. Tree 1's own root is another
// rank, so tree 1 is re-rooted: the collective's root leaves its place in tree 1 (its parent
// there drops it) and becomes the parent of tree 1's old root. The root then feeds (broadcast)
// or drains (reduce) tree 1 through that one extra edge.
#include <algorithm>

#include "algorithms/tree_pattern.hpp"
#include "algorithms/tree_schedule.hpp"

namespace weft {

Schedule buildTree(const CollectiveShape& s) {
  ScheduleBuilder b;
  const int n = s.nranks;
  const TreeFlow flow = treeFlowFor(s.collective);
  if (n == 1) {
    b.copy({BufferId::Send, 0}, {BufferId::Recv, 0}, s.count * s.elemSize);
    return std::move(b).finish();
  }
  const bool rooted = flow != TreeFlow::AllReduce;
  const int root = rooted ? s.root : 0;
  const int v = (s.rank - root + n) % n;
  for (int t = 0; t < 2; ++t) {
    TreeLinks links = doubleBinaryTree(n, v, t);
    if (rooted && t == 1) {
      const int root1 = doubleBinaryTreeRoot1(n);
      if (v == 0) {
        links.parent = -1;
        links.children.insert(links.children.begin(), root1);
      } else {
        if (v == root1) links.parent = 0;
        std::erase(links.children, 0);
      }
    }
    appendTreeFlow(b, s, flow, realRole(links.parent, links.children, root, n),
                   blockRange(s.count, 2, t));
  }
  return std::move(b).finish();
}

}  // namespace weft
