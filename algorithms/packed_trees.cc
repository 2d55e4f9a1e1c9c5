#include "algorithms/packed_trees.hpp"

#include <algorithm>
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

TreeRole roleIn(const WeightedTree& t, int rank) {
  TreeRole role;
  role.parent = t.parent[rank];
  for (int r = 0; r < static_cast<int>(t.parent.size()); ++r)
    if (t.parent[r] == rank) role.children.push_back(r);
  return role;
}

// The parts of `total` elements that trees of these weights carry, in order (the last one ends
// exactly at `total`; parts may be empty).
std::vector<Range> split(uint64_t total, const std::vector<double>& weights) {
  double sum = 0, before = 0;
  for (double w : weights) sum += w;
  std::vector<Range> parts;
  uint64_t begin = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    before += weights[i];
    const uint64_t end =
        i + 1 == weights.size() ? total : static_cast<uint64_t>(std::llround(before / sum * total));
    parts.push_back({begin, std::max(begin, end) - begin});
    begin = std::max(begin, end);
  }
  return parts;
}

// One part flowing down one tree (broadcast, allgather): the part's elements sit at `base` +
// offset in every receive buffer and at the offset in the root's send buffer.
struct DownFlow {
  TreeRole role;
  Range part;
  uint64_t base = 0;
  uint64_t chunks = 0, next = 0;
};

// Appends the flows' chunks interleaved, each flow's next chunk when it is the least advanced
// (by fraction), so that trees sharing a connection advance together instead of one after the
// other: messages to one peer leave in order.
void appendDownFlows(ScheduleBuilder& b, const CollectiveShape& s, std::vector<DownFlow>& flows) {
  const uint32_t e = s.elemSize;
  for (DownFlow& f : flows) {
    f.chunks = f.part.count ? chunkCount(f.part.count, e, s.chunkBytes) : 0;
    if (f.role.parent < 0 && f.part.count)
      b.copy({BufferId::Send, f.part.offset * e}, {BufferId::Recv, (f.base + f.part.offset) * e},
             f.part.count * e);
  }
  for (;;) {
    DownFlow* pick = nullptr;
    for (DownFlow& f : flows)
      if (f.next < f.chunks &&
          (!pick || (f.next + 1.0) / f.chunks < (pick->next + 1.0) / pick->chunks))
        pick = &f;
    if (!pick) return;
    const Range c = chunkOf(pick->part, pick->chunks, pick->next++);
    const BufferRef at{BufferId::Recv, (pick->base + c.offset) * e};
    const bool root = pick->role.parent < 0;
    StepId have = kNoStep;
    if (!root) have = b.recv(pick->role.parent, at, c.count * e);
    for (int child : pick->role.children)
      b.send(child, root ? BufferRef{BufferId::Send, c.offset * e} : at, c.count * e, {have});
  }
}

// Allgather: every rank's block is cut over the trees rooted at it, by their weights; the block
// of rank r sits at r * count in every receive buffer.
Schedule packedAllGather(const CollectiveShape& s, std::span<const WeightedTree> trees) {
  std::vector<std::vector<size_t>> rooted(s.nranks);
  for (size_t i = 0; i < trees.size(); ++i) rooted[checkTree(trees[i], s.nranks)].push_back(i);
  std::vector<DownFlow> flows;
  for (int r = 0; r < s.nranks; ++r) {
    std::vector<double> weights;
    for (size_t i : rooted[r]) weights.push_back(trees[i].weight);
    double sum = 0;
    for (double w : weights) sum += w;
    if (!(sum > 0)) fail(weftInternalError, "packed allgather: no tree carries rank {}'s block", r);
    const std::vector<Range> parts = split(s.count, weights);
    for (size_t k = 0; k < parts.size(); ++k)
      flows.push_back(
          {roleIn(trees[rooted[r][k]], s.rank), parts[k], static_cast<uint64_t>(r) * s.count});
  }
  ScheduleBuilder b;
  appendDownFlows(b, s, flows);
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
  std::vector<double> weights;
  for (const WeightedTree& t : trees) weights.push_back(t.weight);
  const std::vector<Range> parts = split(s.count, weights);
  ScheduleBuilder b;
  if (flow == TreeFlow::Broadcast) {
    std::vector<DownFlow> flows;
    for (size_t i = 0; i < trees.size(); ++i)
      flows.push_back({roleIn(trees[i], s.rank), parts[i], 0});
    appendDownFlows(b, s, flows);
    return std::move(b).finish();
  }
  // Reduce and allreduce: the trees' pipelines, interleaved the same way.
  std::vector<TreePipeline> pipelines;
  pipelines.reserve(trees.size());
  for (size_t i = 0; i < trees.size(); ++i)
    if (parts[i].count) pipelines.emplace_back(b, s, flow, roleIn(trees[i], s.rank), parts[i]);
  std::vector<uint64_t> next(pipelines.size(), 0);
  for (;;) {
    size_t pick = pipelines.size();
    for (size_t i = 0; i < pipelines.size(); ++i)
      if (next[i] < pipelines[i].chunks() &&
          (pick == pipelines.size() ||
           (next[i] + 1.0) / pipelines[i].chunks() < (next[pick] + 1.0) / pipelines[pick].chunks()))
        pick = i;
    if (pick == pipelines.size()) break;
    pipelines[pick].appendChunk(next[pick]++);
  }
  return std::move(b).finish();
}

}  // namespace weft
