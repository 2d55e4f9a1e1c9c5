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

// Allgather: part `part` (elements within the block) of root's block flows down one tree; the
// block sits at root * count in every receive buffer and at 0 in the root's send buffer.
void appendGatherTree(ScheduleBuilder& b, const CollectiveShape& s, const TreeRole& role, int root,
                      Range part) {
  const uint32_t e = s.elemSize;
  const uint64_t base = static_cast<uint64_t>(root) * s.count;
  const bool isRoot = role.parent < 0;
  if (isRoot)
    b.copy({BufferId::Send, part.offset * e}, {BufferId::Recv, (base + part.offset) * e},
           part.count * e);
  const uint64_t chunks = chunkCount(part.count, e, s.chunkBytes);
  for (uint64_t j = 0; j < chunks; ++j) {
    const Range c = chunkOf(part, chunks, j);
    const BufferRef at{BufferId::Recv, (base + c.offset) * e};
    StepId have = kNoStep;
    if (!isRoot) have = b.recv(role.parent, at, c.count * e);
    for (int child : role.children)
      b.send(child, isRoot ? BufferRef{BufferId::Send, c.offset * e} : at, c.count * e, {have});
  }
}

TreeRole roleIn(const WeightedTree& t, int rank) {
  TreeRole role;
  role.parent = t.parent[rank];
  for (int r = 0; r < static_cast<int>(t.parent.size()); ++r)
    if (t.parent[r] == rank) role.children.push_back(r);
  return role;
}

// Allgather: every rank's block is cut over the trees rooted at it, by their weights.
Schedule packedAllGather(const CollectiveShape& s, std::span<const WeightedTree> trees) {
  std::vector<double> total(s.nranks, 0);
  for (const WeightedTree& t : trees) total[checkTree(t, s.nranks)] += t.weight;
  for (int r = 0; r < s.nranks; ++r)
    if (!(total[r] > 0))
      fail(weftInternalError, "packed allgather: no tree carries rank {}'s block", r);
  ScheduleBuilder b;
  for (int r = 0; r < s.nranks; ++r) {
    double before = 0;
    uint64_t begin = 0;
    const WeightedTree* last = nullptr;
    for (const WeightedTree& t : trees)
      if (t.parent[r] == -1) last = &t;
    for (const WeightedTree& t : trees) {
      if (t.parent[r] != -1) continue;
      before += t.weight;
      const uint64_t end =
          &t == last ? s.count : static_cast<uint64_t>(std::llround(before / total[r] * s.count));
      if (end <= begin) continue;
      appendGatherTree(b, s, roleIn(t, s.rank), r, Range{begin, end - begin});
      begin = end;
    }
  }
  return std::move(b).finish();
}

}  // namespace

Schedule buildPackedTrees(const CollectiveShape& s, std::span<const WeightedTree> trees) {
  if (trees.empty()) fail(weftInternalError, "no packed trees");
  if (s.collective == Collective::AllGather) return packedAllGather(s, trees);
  const TreeFlow flow = treeFlowFor(s.collective);
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
    appendTreeFlow(b, s, flow, roleIn(trees[i], s.rank), Range{begin, end - begin});
    begin = end;
  }
  return std::move(b).finish();
}

}  // namespace weft
