// Recursive halving and doubling (Rabenseifner). Allreduce: a reduce-scatter by recursive
// halving (round k: partners differ in bit k, each keeps one half of its current range and sends
// the other, so the bytes halve every round; nearest partners first, where links are fastest
// and the halves largest), then an allgather by recursive doubling retracing the rounds in
// reverse. 2 log n latencies and 2(n-1)/n bytes per byte, like the ring in bandwidth with
// logarithmic latency. Reduce-scatter: recursive halving over blocks (farthest partners first,
// so that each rank ends with its own block).
//
// Non-power-of-two n: the first 2(n - p') ranks fold pairwise before and unfold after
// (tree_pattern.hpp: foldToPowerOfTwo), as MPICH does.
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/partition.hpp"
#include "algorithms/tree_pattern.hpp"
#include "lib/base/error.hpp"

namespace weft {
namespace {

Schedule allReduce(const CollectiveShape& s) {
  ScheduleBuilder b;
  const int n = s.nranks;
  const uint32_t e = s.elemSize;
  const uint64_t bytes = s.count * e;
  auto at = [&](BufferId id, Range r) { return BufferRef{id, r.offset * e}; };
  const Range all{0, s.count};
  if (n == 1) {
    b.copy(at(BufferId::Send, all), at(BufferId::Recv, all), bytes);
    return std::move(b).finish();
  }
  const FoldedRank f = foldToPowerOfTwo(n, s.rank);
  if (f.participant < 0) {
    const StepId handed = b.send(f.partner, at(BufferId::Send, all), bytes);
    b.recv(f.partner, at(BufferId::Recv, all), bytes, {handed});
    return std::move(b).finish();
  }
  const BufferRef tmp{BufferId::Scratch, b.allocateScratch(bytes)};
  StepId current = kNoStep;
  BufferId source = BufferId::Send;  // where this rank's partial sums are
  if (f.partner >= 0) {
    current = b.recvReduce(f.partner, at(BufferId::Send, all), tmp, at(BufferId::Recv, all), bytes);
    source = BufferId::Recv;
  }
  const int v = f.participant, p2 = floorPowerOfTwo(n);
  struct Round {
    int peer;
    Range gave;
    StepId sent;
  };
  std::vector<Round> rounds;
  Range range = all;
  for (int mask = 1; mask < p2; mask <<= 1) {
    const int peer = participantRank(n, v ^ mask);
    const Range lower{range.offset, range.count / 2};
    const Range upper{range.offset + lower.count, range.count - lower.count};
    const Range keep = (v & mask) ? upper : lower, give = (v & mask) ? lower : upper;
    const StepId sent = b.send(peer, at(source, give), give.count * e, {current});
    current = b.recvReduce(peer, at(source, keep), tmp, at(BufferId::Recv, keep), keep.count * e,
                           {current});
    rounds.push_back({peer, give, sent});
    source = BufferId::Recv;
    range = keep;
  }
  for (auto round = rounds.rbegin(); round != rounds.rend(); ++round) {
    b.send(round->peer, at(BufferId::Recv, range), range.count * e, {current});
    // The half given away earlier comes back reduced; what was sent from it must be gone.
    const StepId got =
        b.recv(round->peer, at(BufferId::Recv, round->gave), round->gave.count * e, {round->sent});
    current = b.copy(tmp, tmp, 0, {current, got});
    range = {std::min(range.offset, round->gave.offset), range.count + round->gave.count};
  }
  if (f.partner >= 0) b.send(f.partner, at(BufferId::Recv, all), bytes, {current});
  return std::move(b).finish();
}

Schedule reduceScatter(const CollectiveShape& s) {
  ScheduleBuilder b;
  const int n = s.nranks;
  const uint32_t e = s.elemSize;
  const uint64_t bb = s.count * e;
  const BufferRef out{BufferId::Recv, 0};
  auto block = [&](BufferId id, int r) { return BufferRef{id, static_cast<uint64_t>(r) * bb}; };
  if (n == 1) {
    b.copy(block(BufferId::Send, 0), out, bb);
    return std::move(b).finish();
  }
  const FoldedRank f = foldToPowerOfTwo(n, s.rank);
  if (f.participant < 0) {
    const StepId handed = b.send(f.partner, block(BufferId::Send, 0), n * bb);
    b.recv(f.partner, out, bb, {handed});  // in place, the output is part of what was sent
    return std::move(b).finish();
  }
  const uint64_t partials = b.allocateScratch(n * bb);
  const BufferRef tmp{BufferId::Scratch, b.allocateScratch(n * bb)};
  auto partial = [&](int r) { return BufferRef{BufferId::Scratch, partials + r * bb}; };
  StepId current = kNoStep;
  bool inScratch = false;  // partial sums are in the scratch copy (else the input)
  if (f.partner >= 0) {
    current = b.recvReduce(f.partner, block(BufferId::Send, 0), tmp, partial(0), n * bb);
    inScratch = true;
  }
  auto where = [&](int r) { return inScratch ? partial(r) : block(BufferId::Send, r); };
  // Participants [lo, lo + width) share the blocks of ranks [first(lo), first(lo + width)).
  const int v = f.participant;
  int lo = 0;
  for (int half = floorPowerOfTwo(n) / 2; half >= 1; half /= 2) {
    const int peer = participantRank(n, v ^ half);
    const int mid = lo + half;
    const bool lowerHalf = v < mid;
    const int keepLo = lowerHalf ? lo : mid, giveLo = lowerHalf ? mid : lo;
    const int keepFirst = participantFirstRank(n, keepLo),
              keepEnd = participantFirstRank(n, keepLo + half);
    const int giveFirst = participantFirstRank(n, giveLo),
              giveEnd = participantFirstRank(n, giveLo + half);
    b.send(peer, where(giveFirst), (giveEnd - giveFirst) * bb, {current});
    current = b.recvReduce(peer, where(keepFirst), tmp, partial(keepFirst),
                           (keepEnd - keepFirst) * bb, {current});
    inScratch = true;
    lo = keepLo;
  }
  b.copy(partial(s.rank), out, bb, {current});
  if (f.partner >= 0) b.send(f.partner, partial(f.partner), bb, {current});
  return std::move(b).finish();
}

}  // namespace

Schedule buildHalvingDoubling(const CollectiveShape& s) {
  switch (s.collective) {
    case Collective::AllReduce: return allReduce(s);
    case Collective::ReduceScatter: return reduceScatter(s);
    default:
      fail(weftInternalError, "halving-doubling has no schedule for {}",
           collectiveName(s.collective));
  }
}

}  // namespace weft
