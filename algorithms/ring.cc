// Ring schedules: reduce-scatter, allgather, and allreduce as the two in sequence.
//
// Ranks form the ring 0 -> 1 -> ... -> n-1 -> 0 (or shape.ringOrder). Data is cut into n blocks (one per rank) and
// every block into the same number of pipeline chunks, so chunk j of one step depends only on
// chunk j of the previous step and chunks flow through the ring back to back.
//
// Reduce-scatter, rank r: at step s (0..n-2) send block r-s-1 to the right and receive block
// r-s-2 from the left, reducing it with the own contribution; after n-1 steps block r is fully
// reduced. Allgather, rank r: at step s send block r-s, receive block r-s-1.
#include <algorithm>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/partition.hpp"
#include "lib/base/error.hpp"

namespace weft {
namespace {

// With shape.ringOrder the ring follows that order: positions replace ranks, and the block a
// position handles is the block of the rank at that position (block r still ends on rank r).
struct Ring {
  int n, r, left, right;
  std::span<const int> order;
  explicit Ring(const CollectiveShape& s) : n(s.nranks), r(s.rank), order(s.ringOrder) {
    if (!order.empty()) {
      if (static_cast<int>(order.size()) != n)
        fail(weftInternalError, "ring order of {} ranks for {} ranks", order.size(), n);
      r = static_cast<int>(std::find(order.begin(), order.end(), s.rank) - order.begin());
      if (r == n) fail(weftInternalError, "rank {} is not in the ring order", s.rank);
    }
    left = at((r + n - 1) % n);
    right = at((r + 1) % n);
  }
  int at(int position) const { return order.empty() ? position : order[position]; }
  int block(int offset) const { return at(((r + offset) % n + n) % n); }
};

BufferRef ref(BufferId buffer, Range range, uint32_t elemSize) {
  return {buffer, range.offset * elemSize};
}

// Allreduce over `count` elements: reduce-scatter into the receive buffer (which holds the
// partial sums: every block is written once, by the step that receives it), then allgather.
Schedule ringAllReduce(const CollectiveShape& s) {
  ScheduleBuilder b;
  const uint32_t e = s.elemSize;
  const Ring ring(s);
  if (ring.n == 1) {
    b.copy({BufferId::Send, 0}, {BufferId::Recv, 0}, s.count * e);
    return std::move(b).finish();
  }
  const uint64_t chunks = chunkCount(blockRange(s.count, ring.n, 0).count, e, s.chunkBytes);
  auto chunk = [&](int block, uint64_t j) {
    return chunkOf(blockRange(s.count, ring.n, block), chunks, j);
  };
  // One landing slot per chunk index: the reduce of step s frees it for step s+1.
  const uint64_t maxChunk = (blockRange(s.count, ring.n, 0).count + chunks - 1) / chunks;
  const uint64_t tmpBase = b.allocateScratch(chunks * maxChunk * e);
  auto tmp = [&](uint64_t j) { return BufferRef{BufferId::Scratch, tmpBase + j * maxChunk * e}; };

  std::vector<StepId> reduced(chunks, kNoStep);  // last receive-reduce of chunk j
  std::vector<std::vector<StepId>> rsSend(ring.n - 1, std::vector<StepId>(chunks));
  for (int step = 0; step < ring.n - 1; ++step) {
    const int sendBlock = ring.block(-step - 1), recvBlock = ring.block(-step - 2);
    for (uint64_t j = 0; j < chunks; ++j) {
      const Range c = chunk(sendBlock, j);
      // Step 0 sends the own input; later steps the partial sum received one step earlier.
      const BufferId from = step == 0 ? BufferId::Send : BufferId::Recv;
      rsSend[step][j] = b.send(ring.right, ref(from, c, e), c.count * e, {reduced[j]});
    }
    for (uint64_t j = 0; j < chunks; ++j) {
      const Range c = chunk(recvBlock, j);
      reduced[j] = b.recvReduce(ring.left, ref(BufferId::Send, c, e), tmp(j),
                                ref(BufferId::Recv, c, e), c.count * e, {reduced[j]});
    }
  }
  std::vector<StepId> received = reduced;  // chunk j of the block to forward next
  for (int step = 0; step < ring.n - 1; ++step) {
    const int sendBlock = ring.block(-step), recvBlock = ring.block(-step - 1);
    for (uint64_t j = 0; j < chunks; ++j) {
      const Range c = chunk(sendBlock, j);
      b.send(ring.right, ref(BufferId::Recv, c, e), c.count * e, {received[j]});
    }
    for (uint64_t j = 0; j < chunks; ++j) {
      const Range c = chunk(recvBlock, j);
      // The block arriving now was sent from this buffer during reduce-scatter step `step`
      // (in place, from the caller's input): that send must be done before it is overwritten.
      received[j] = b.recv(ring.left, ref(BufferId::Recv, c, e), c.count * e,
                           {rsSend[step][j], received[j]});
    }
  }
  return std::move(b).finish();
}

// Reduce-scatter: the input holds n blocks of `count`; block r, reduced, lands in the output.
// Partial sums live in scratch, in two slots per chunk that alternate between steps so a
// partial can be sent while the next one arrives.
Schedule ringReduceScatter(const CollectiveShape& s) {
  ScheduleBuilder b;
  const uint32_t e = s.elemSize;
  const Ring ring(s);
  const Range own{static_cast<uint64_t>(s.rank) * s.count, s.count};
  if (ring.n == 1) {
    b.copy(ref(BufferId::Send, own, e), {BufferId::Recv, 0}, s.count * e);
    return std::move(b).finish();
  }
  const uint64_t chunks = chunkCount(s.count, e, s.chunkBytes);
  const uint64_t maxChunk = (s.count + chunks - 1) / chunks;
  const uint64_t slotsBase = b.allocateScratch(2 * chunks * maxChunk * e);
  auto slot = [&](int step, uint64_t j) {
    return BufferRef{BufferId::Scratch, slotsBase + ((step % 2) * chunks + j) * maxChunk * e};
  };
  auto chunk = [&](int block, uint64_t j) {
    return chunkOf(Range{static_cast<uint64_t>(block) * s.count, s.count}, chunks, j);
  };

  std::vector<StepId> reduced(chunks, kNoStep), sentPrev(chunks, kNoStep);
  for (int step = 0; step < ring.n - 1; ++step) {
    const int sendBlock = ring.block(-step - 1), recvBlock = ring.block(-step - 2);
    std::vector<StepId> sent(chunks);
    for (uint64_t j = 0; j < chunks; ++j) {
      const Range c = chunk(sendBlock, j);
      const BufferRef from = step == 0 ? ref(BufferId::Send, c, e) : slot(step - 1, j);
      sent[j] = b.send(ring.right, from, c.count * e, {reduced[j]});
    }
    const bool last = step == ring.n - 2;
    for (uint64_t j = 0; j < chunks; ++j) {
      const Range c = chunk(recvBlock, j);
      const BufferRef out = last ? ref(BufferId::Recv, chunkOf({0, s.count}, chunks, j), e)
                                 : slot(step, j);
      // The slot of this step was last read by the send of step-1.
      reduced[j] = b.recvReduce(ring.left, ref(BufferId::Send, c, e), slot(step, j), out,
                                c.count * e, {reduced[j], sentPrev[j]});
    }
    sentPrev = sent;
  }
  return std::move(b).finish();
}

// Allgather: block r comes from the own input; every other block arrives from the left and is
// forwarded to the right.
Schedule ringAllGather(const CollectiveShape& s) {
  ScheduleBuilder b;
  const uint32_t e = s.elemSize;
  const Ring ring(s);
  const Range own{static_cast<uint64_t>(s.rank) * s.count, s.count};
  b.copy({BufferId::Send, 0}, ref(BufferId::Recv, own, e), s.count * e);
  if (ring.n == 1) return std::move(b).finish();
  const uint64_t chunks = chunkCount(s.count, e, s.chunkBytes);
  auto chunk = [&](int block, uint64_t j) {
    return chunkOf(Range{static_cast<uint64_t>(block) * s.count, s.count}, chunks, j);
  };
  std::vector<StepId> received(chunks, kNoStep);
  for (int step = 0; step < ring.n - 1; ++step) {
    const int sendBlock = ring.block(-step), recvBlock = ring.block(-step - 1);
    for (uint64_t j = 0; j < chunks; ++j) {
      const Range c = chunk(sendBlock, j);
      const BufferRef from = step == 0 ? ref(BufferId::Send, chunkOf({0, s.count}, chunks, j), e)
                                       : ref(BufferId::Recv, c, e);
      b.send(ring.right, from, c.count * e, {received[j]});
    }
    for (uint64_t j = 0; j < chunks; ++j) {
      const Range c = chunk(recvBlock, j);
      received[j] = b.recv(ring.left, ref(BufferId::Recv, c, e), c.count * e);
    }
  }
  return std::move(b).finish();
}

}  // namespace

Schedule buildRing(const CollectiveShape& s) {
  switch (s.collective) {
    case Collective::AllReduce: return ringAllReduce(s);
    case Collective::ReduceScatter: return ringReduceScatter(s);
    case Collective::AllGather: return ringAllGather(s);
    default: fail(weftInternalError, "ring has no schedule for {}", collectiveName(s.collective));
  }
}

}  // namespace weft
