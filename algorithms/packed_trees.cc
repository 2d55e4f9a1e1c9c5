#include "algorithms/packed_trees.hpp"

#include <cmath>

#include "algorithms/tree_schedule.hpp"
#include "lib/base/error.hpp"

namespace weft {
namespace {

int checkTree(const WeightedTree& t, int n) {
  if (static_cast<int>(t.parent.size()) != n)
    fail(weftInternalError, "packed tree over {} ranks for {} ranks", t.parent.size(), n);
  int root = -1;
  for (int r = 0; r < n; ++r) {
    const int p = t.parent[r];
    if (p == -1) {
      if (root >= 0) fail(weftInternalError, "packed tree has two roots ({} and {})", root, r);
      root = r;
    } else if (p < 0 || p >= n || p == r) {
      fail(weftInternalError, "packed tree: rank {} has parent {}", r, p);
    }
  }
  if (root < 0) fail(weftInternalError, "packed tree has no root");
  for (int r = 0; r < n; ++r) {  // every rank reaches the root in fewer than n steps
    int v = r, steps = 0;
    while (v != root && steps++ < n) v = t.parent[v];
    if (v != root) fail(weftInternalError, "packed tree: rank {} is on a cycle", r);
  }
  if (!(t.weight >= 0)) fail(weftInternalError, "packed tree of weight {}", t.weight);
  return root;
}

}  // namespace

Schedule buildPackedTrees(const CollectiveShape& s, std::span<const WeightedTree> trees) {
  const TreeFlow flow = treeFlowFor(s.collective);
  if (trees.empty()) fail(weftInternalError, "no packed trees");
  double total = 0;
  for (const WeightedTree& t : trees) {
    const int root = checkTree(t, s.nranks);
    if (flow != TreeFlow::AllReduce && root != s.root)
      fail(weftInternalError, "packed tree rooted at {} for a {} from {}", root,
           collectiveName(s.collective), s.root);
    total += t.weight;
  }
  if (!(total > 0)) fail(weftInternalError, "packed trees of total weight {}", total);
  ScheduleBuilder b;
  double before = 0;
  uint64_t begin = 0;
  for (size_t i = 0; i < trees.size(); ++i) {
    before += trees[i].weight;
    const uint64_t end = i + 1 == trees.size()
                             ? s.count
                             : static_cast<uint64_t>(std::llround(before / total * s.count));
    if (end <= begin) continue;
    TreeRole role;
    role.parent = trees[i].parent[s.rank];
    for (int r = 0; r < s.nranks; ++r)
      if (trees[i].parent[r] == s.rank) role.children.push_back(r);
    appendTreeFlow(b, s, flow, role, Range{begin, end - begin});
    begin = end;
  }
  // A zero count still owes the root's copy nothing; every rank's schedule may be empty.
  return std::move(b).finish();
}

}  // namespace weft
