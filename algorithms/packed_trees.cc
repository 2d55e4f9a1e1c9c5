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

// The pipeline's rounds, as the fractions of the buffer (allgather: of each block) at which they
// end. Every tree's part is cut at the same fractions, so every tree has the same number of
// chunks, each in proportion to the tree's weight: all trees fill and drain their pipelines in
// the same time (a light tree cut into chunks of chunkBytes would have few, slow chunks and
// finish long after the others). A round moves chunkBytes of the buffer over all the trees; the
// first and the last rounds ramp up and down (1/16, 1/8, 1/4, 1/2 of that) so that filling and
// draining pipelines as deep as the trees costs a fraction of a round per level.
std::vector<double> roundEnds(uint64_t count, uint32_t elemSize, uint64_t chunkBytes) {
  const uint64_t round = std::max<uint64_t>(1, chunkBytes / elemSize);
  constexpr int kRamp = 4;
  std::vector<uint64_t> ramp;  // 1/16, 1/8, 1/4, 1/2 of a round
  uint64_t ramped = 0;
  for (int k = kRamp; k >= 1; --k) {
    ramp.push_back(std::max<uint64_t>(1, round >> k));
    ramped += 2 * ramp.back();
  }
  std::vector<uint64_t> sizes;
  if (count >= ramped + round) {  // a full round at least between the ramps
    const uint64_t middle = count - ramped, rounds = chunkCount(middle, elemSize, chunkBytes);
    sizes = ramp;
    for (uint64_t j = 0; j < rounds; ++j) sizes.push_back(blockRange(middle, rounds, j).count);
    sizes.insert(sizes.end(), ramp.rbegin(), ramp.rend());
  } else {
    const uint64_t rounds = chunkCount(count, elemSize, chunkBytes);
    for (uint64_t j = 0; j < rounds; ++j) sizes.push_back(blockRange(count, rounds, j).count);
  }
  std::vector<double> ends;
  uint64_t done = 0;
  for (uint64_t size : sizes) {
    done += size;
    ends.push_back(static_cast<double>(done) / static_cast<double>(std::max<uint64_t>(1, count)));
  }
  ends.back() = 1;
  return ends;
}

// A part cut at the rounds' ends (chunks may be empty when the part is small).
std::vector<Range> cut(Range part, const std::vector<double>& ends) {
  std::vector<Range> chunks;
  uint64_t begin = 0;
  for (double end : ends) {
    const uint64_t to = std::min<uint64_t>(
        part.count, static_cast<uint64_t>(std::llround(end * static_cast<double>(part.count))));
    chunks.push_back({part.offset + begin, std::max(begin, to) - begin});
    begin = std::max(begin, to);
  }
  return chunks;
}

// One part flowing down one tree (broadcast, allgather): the part's elements sit at `base` +
// offset in every receive buffer and at the offset in the root's send buffer.
struct DownFlow {
  TreeRole role;
  Range part;
  uint64_t base = 0;
};

// How many rounds ahead of the last chunk it has received a rank takes in. Its receives of round
// j are posted once a chunk of round j - kRoundsAhead is in, so senders (rendezvous) cannot flood
// its links with rounds that nothing waits for yet, ahead of the chunks its trees need now; and a
// rank's own data (allgather: its block, which it could send as fast as its links allow) goes out
// at the pace of what it forwards, instead of queueing whole on its connections ahead of the
// other blocks.
constexpr uint64_t kRoundsAhead = 4;

// Appends the flows' chunks round by round, so that trees sharing a connection advance together
// instead of one after the other: messages to one peer leave in order.
void appendDownFlows(ScheduleBuilder& b, const CollectiveShape& s,
                     const std::vector<DownFlow>& flows, const std::vector<double>& ends) {
  const uint32_t e = s.elemSize;
  std::vector<std::vector<Range>> chunks;
  for (const DownFlow& f : flows) {
    chunks.push_back(cut(f.part, ends));
    if (f.role.parent < 0 && f.part.count)
      b.copy({BufferId::Send, f.part.offset * e}, {BufferId::Recv, (f.base + f.part.offset) * e},
             f.part.count * e);
  }
  std::vector<StepId> lastRecv(ends.size(), kNoStep);  // per round
  for (size_t j = 0; j < ends.size(); ++j)
    for (size_t i = 0; i < flows.size(); ++i) {
      const DownFlow& f = flows[i];
      const Range c = chunks[i][j];
      if (c.count == 0) continue;
      const BufferRef at{BufferId::Recv, (f.base + c.offset) * e};
      const bool root = f.role.parent < 0;
      StepId have = kNoStep;
      const StepId pace = j >= kRoundsAhead ? lastRecv[j - kRoundsAhead] : kNoStep;
      if (!root)
        have = lastRecv[j] = b.recv(f.role.parent, at, c.count * e, {pace});
      else
        have = pace;
      for (int child : f.role.children)
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
  appendDownFlows(b, s, flows, roundEnds(s.count, s.elemSize, s.chunkBytes));
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
  const std::vector<double> ends = roundEnds(s.count, s.elemSize, s.chunkBytes);
  ScheduleBuilder b;
  if (flow == TreeFlow::Broadcast) {
    std::vector<DownFlow> flows;
    for (size_t i = 0; i < trees.size(); ++i)
      flows.push_back({roleIn(trees[i], s.rank), parts[i], 0});
    appendDownFlows(b, s, flows, ends);
    return std::move(b).finish();
  }
  // Reduce and allreduce: the trees' pipelines, round by round. The cost model (like a link
  // with one queue per connection) shares a link equally among the messages on it, not by the
  // trees' weights, so a tree's chunk of a round is cut into pieces in proportion to its weight
  // (the heaviest tree into kPieces, none into fewer than one): trees that share a link then have
  // messages on it in proportion to their weights and get their share of it. One scratch slot
  // per piece, child and tree (tree.cc's pipelines keep four chunks): a child sends a tree's
  // piece of round j + 1 once its piece of round j is reduced, so that no tree runs ahead of
  // the others and takes more than its share of the links it shares with them.
  constexpr uint64_t kPackedTreeWindow = 1;
  constexpr uint64_t kPieces = 8;
  const double heaviest = *std::max_element(weights.begin(), weights.end());
  std::vector<TreePipeline> pipelines;
  std::vector<uint64_t> pieces;
  pipelines.reserve(trees.size());
  for (size_t i = 0; i < trees.size(); ++i)
    if (parts[i].count) {
      const uint64_t k = std::clamp<uint64_t>(
          static_cast<uint64_t>(std::llround(weights[i] / heaviest * kPieces)), 1, kPieces);
      std::vector<double> sub;  // the rounds' ends, each round cut into k pieces
      double before = 0;
      for (double end : ends) {
        for (uint64_t q = 1; q < k; ++q)
          sub.push_back(before + (end - before) * static_cast<double>(q) / static_cast<double>(k));
        sub.push_back(end);
        before = end;
      }
      pieces.push_back(k);
      pipelines.emplace_back(b, s, flow, roleIn(trees[i], s.rank), parts[i], cut(parts[i], sub),
                             kPackedTreeWindow * k);
    }
  for (size_t j = 0; j < ends.size(); ++j)
    for (size_t i = 0; i < pipelines.size(); ++i)
      for (uint64_t q = 0; q < pieces[i]; ++q) pipelines[i].appendChunk(j * pieces[i] + q);
  return std::move(b).finish();
}

}  // namespace weft
