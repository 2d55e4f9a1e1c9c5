// Recursive doubling, for small messages: log2 n rounds, in round k partners differ in bit k.
// Allreduce exchanges the whole vector every round (log n latencies, n log n bytes); allgather
// exchanges the blocks gathered so far, doubling each round.
//
// Non-power-of-two n, the standard way (MPICH's): with p' the largest power of two below n and
// r = n - p', the first 2r ranks pair up; the even one hands its data to the odd one and waits,
// the p' remaining ranks run the algorithm, and the odd ones hand the result back
// (tree_pattern.hpp: foldToPowerOfTwo). Costs two extra latencies and 2 n bytes.
#include "algorithms/algorithm.hpp"
#include "algorithms/partition.hpp"
#include "algorithms/tree_pattern.hpp"
#include "lib/base/error.hpp"

namespace weft {
namespace {

Schedule recursiveDoublingAllReduce(const CollectiveShape& s) {
  ScheduleBuilder b;
  const int n = s.nranks;
  const uint64_t bytes = s.count * s.elemSize;
  const BufferRef send{BufferId::Send, 0}, recv{BufferId::Recv, 0};
  if (n == 1) {
    b.copy(send, recv, bytes);
    return std::move(b).finish();
  }
  const FoldedRank f = foldToPowerOfTwo(n, s.rank);
  if (f.participant < 0) {
    const StepId handed = b.send(f.partner, send, bytes);
    b.recv(f.partner, recv, bytes, {handed});
    return std::move(b).finish();
  }
  const BufferRef tmp{BufferId::Scratch, b.allocateScratch(bytes)};
  const StepId start =
      f.partner >= 0 ? b.recvReduce(f.partner, send, tmp, recv, bytes) : b.copy(send, recv, bytes);
  StepId current = start;
  for (int mask = 1; mask < floorPowerOfTwo(n); mask <<= 1) {
    const int peer = participantRank(n, f.participant ^ mask);
    const StepId sent = b.send(peer, recv, bytes, {current});
    const StepId got = b.recv(peer, tmp, bytes, {current});
    current = b.reduce(recv, tmp, recv, bytes, {sent, got});
  }
  if (f.partner >= 0) b.send(f.partner, recv, bytes, {current});
  return std::move(b).finish();
}

Schedule allGather(const CollectiveShape& s) {
  ScheduleBuilder b;
  const int n = s.nranks;
  const uint64_t bb = s.count * s.elemSize;
  auto blocks = [&](int first) { return BufferRef{BufferId::Recv, first * bb}; };
  const StepId own = b.copy({BufferId::Send, 0}, blocks(s.rank), bb);
  if (n == 1) return std::move(b).finish();
  const FoldedRank f = foldToPowerOfTwo(n, s.rank);
  // Every block but `except`, as at most two messages (both ends cut the same way).
  auto allBut = [&](int except, auto&& message) {
    if (except > 0) message(0, except);
    if (except + 1 < n) message(except + 1, n);
  };
  if (f.participant < 0) {
    b.send(f.partner, {BufferId::Send, 0}, bb);
    allBut(s.rank,
           [&](int first, int end) { b.recv(f.partner, blocks(first), (end - first) * bb); });
    return std::move(b).finish();
  }
  StepId current = own;
  if (f.partner >= 0) {
    const StepId got = b.recv(f.partner, blocks(f.partner), bb);
    current = b.copy(blocks(0), blocks(0), 0, {current, got});
  }
  const int v = f.participant;
  for (int mask = 1; mask < floorPowerOfTwo(n); mask <<= 1) {
    const int peer = participantRank(n, v ^ mask);
    const int mine = v & ~(mask - 1), theirs = (v ^ mask) & ~(mask - 1);
    const int myFirst = participantFirstRank(n, mine), myEnd = participantFirstRank(n, mine + mask);
    const int theirFirst = participantFirstRank(n, theirs),
              theirEnd = participantFirstRank(n, theirs + mask);
    b.send(peer, blocks(myFirst), (myEnd - myFirst) * bb, {current});
    const StepId got = b.recv(peer, blocks(theirFirst), (theirEnd - theirFirst) * bb);
    current = b.copy(blocks(0), blocks(0), 0, {current, got});
  }
  if (f.partner >= 0)
    allBut(f.partner, [&](int first, int end) {
      b.send(f.partner, blocks(first), (end - first) * bb, {current});
    });
  return std::move(b).finish();
}

}  // namespace

Schedule buildRecursiveDoubling(const CollectiveShape& s) {
  switch (s.collective) {
    case Collective::AllReduce: return recursiveDoublingAllReduce(s);
    case Collective::AllGather: return allGather(s);
    default:
      fail(weftInternalError, "recursive doubling has no schedule for {}",
           collectiveName(s.collective));
  }
}

}  // namespace weft
