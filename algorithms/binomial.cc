// Binomial trees. Broadcast and reduce: the k-nomial tree of radix 2 (knomial.cc), pipelined.
// Gather and scatter: the subtree of virtual rank v (v = rank - root mod n) is the contiguous
// range of virtual ranks [v, v + span); inner ranks gather (or scatter) their subtree's blocks
// in a scratch area laid out in virtual-rank order, so that each edge carries one message. The
// root's buffer is in real-rank order: messages to and from the root are cut where the real
// rank wraps from n-1 to 0 (both ends cut the same way).
#include <vector>

#include "algorithms/tree_pattern.hpp"
#include "algorithms/tree_schedule.hpp"
#include "lib/base/error.hpp"

namespace weft {
namespace {

struct Piece {
  int first;  // virtual rank of the first block
  int count;  // blocks
};

// Virtual ranks [first, first + count) as pieces contiguous in real-rank order.
std::vector<Piece> realPieces(int first, int count, int root, int n) {
  const int wrap = n - root;  // virtual rank of real rank 0
  if (root == 0 || first >= wrap || first + count <= wrap) return {{first, count}};
  return {{first, wrap - first}, {wrap, first + count - wrap}};
}

Schedule gatherOrScatter(const CollectiveShape& s) {
  ScheduleBuilder b;
  const int n = s.nranks;
  const bool gather = s.collective == Collective::Gather;
  const uint64_t bb = s.count * s.elemSize;  // bytes per block
  const int v = (s.rank - s.root + n) % n;
  const int span = knomialSpan(n, v, 2);
  const TreeLinks links = knomialTree(n, v, 2);
  auto real = [&](int u) { return (u + s.root) % n; };
  // Where block u (virtual) lives on this rank.
  auto rootBlock = [&](BufferId id, int u) {
    return BufferRef{id, static_cast<uint64_t>(real(u)) * bb};
  };
  const uint64_t staging = (v != 0 && span > 1) ? b.allocateScratch(span * bb) : 0;
  auto staged = [&](int u) {
    return BufferRef{BufferId::Scratch, staging + static_cast<uint64_t>(u - v) * bb};
  };

  if (v == 0) {
    // The root: its own block, then one exchange (in one or two pieces) per child subtree.
    if (gather)
      b.copy({BufferId::Send, 0}, rootBlock(BufferId::Recv, 0), bb);
    else
      b.copy(rootBlock(BufferId::Send, 0), {BufferId::Recv, 0}, bb);
    for (int c : links.children)
      for (const Piece& p : realPieces(c, knomialSpan(n, c, 2), s.root, n)) {
        if (gather)
          b.recv(real(c), rootBlock(BufferId::Recv, p.first), p.count * bb);
        else
          b.send(real(c), rootBlock(BufferId::Send, p.first), p.count * bb);
      }
    return std::move(b).finish();
  }

  const int parent = real(links.parent);
  const bool parentIsRoot = links.parent == 0;
  if (span == 1) {  // a leaf: straight from or into the caller's buffer
    if (gather)
      b.send(parent, {BufferId::Send, 0}, bb);
    else
      b.recv(parent, {BufferId::Recv, 0}, bb);
    return std::move(b).finish();
  }
  const std::vector<Piece> up =
      parentIsRoot ? realPieces(v, span, s.root, n) : std::vector<Piece>{{v, span}};
  if (gather) {
    StepId ready = b.copy({BufferId::Send, 0}, staged(v), bb);
    for (int c : links.children) {
      const StepId got = b.recv(real(c), staged(c), knomialSpan(n, c, 2) * bb);
      ready = b.copy(staged(v), staged(v), 0, {ready, got});  // joins the two
    }
    for (const Piece& p : up) b.send(parent, staged(p.first), p.count * bb, {ready});
  } else {
    StepId have = kNoStep;
    for (const Piece& p : up) {
      const StepId got = b.recv(parent, staged(p.first), p.count * bb);
      have = have == kNoStep ? got : b.copy(staged(v), staged(v), 0, {have, got});
    }
    b.copy(staged(v), {BufferId::Recv, 0}, bb, {have});
    for (int c : links.children) b.send(real(c), staged(c), knomialSpan(n, c, 2) * bb, {have});
  }
  return std::move(b).finish();
}

}  // namespace

Schedule buildBinomial(const CollectiveShape& s) {
  switch (s.collective) {
    case Collective::Broadcast:
    case Collective::Reduce: return buildKnomialTree(s, 2);
    case Collective::Gather:
    case Collective::Scatter: return gatherOrScatter(s);
    default:
      fail(weftInternalError, "binomial has no schedule for {}", collectiveName(s.collective));
  }
}

}  // namespace weft
