// Broadcast as a binomial scatter followed by a ring allgather (van de Geijn), for large
// messages: the root sends each byte about twice instead of log n times. The buffer is cut into
// n blocks in virtual-rank order (v = rank - root mod n; block v is blockRange(count, n, v)), so
// a binomial subtree [v, v + span) owns one contiguous range and gets it in one message. The
// ring then runs over virtual ranks, chunked like the ring allgather.
#include <vector>

#include "algorithms/tree_pattern.hpp"
#include "algorithms/tree_schedule.hpp"
#include "lib/base/error.hpp"

namespace weft {

Schedule buildScatterAllGather(const CollectiveShape& s) {
  if (s.collective != Collective::Broadcast)
    fail(weftInternalError, "scatter-allgather has no schedule for {}",
         collectiveName(s.collective));
  ScheduleBuilder b;
  const int n = s.nranks;
  const uint32_t e = s.elemSize;
  const int v = (s.rank - s.root + n) % n;
  auto real = [&](int u) { return (u + s.root) % n; };
  auto block = [&](int u) { return blockRange(s.count, n, ((u % n) + n) % n); };
  // Elements of the virtual-rank blocks [first, first + count).
  auto blocks = [&](int first, int count) {
    const Range a = blockRange(s.count, n, first);
    const uint64_t end =
        first + count >= n ? s.count : blockRange(s.count, n, first + count).offset;
    return Range{a.offset, end - a.offset};
  };
  auto at = [&](BufferId id, Range r) { return BufferRef{id, r.offset * e}; };
  if (n == 1) {
    b.copy({BufferId::Send, 0}, {BufferId::Recv, 0}, s.count * e);
    return std::move(b).finish();
  }

  // Scatter. `sentBy[u]`: the scatter send that reads block u (it must finish before the ring
  // writes block u again, with the same bytes).
  const TreeLinks links = knomialTree(n, v, 2);
  std::vector<StepId> sentBy(n, kNoStep);
  StepId have = kNoStep;
  const BufferId from = v == 0 ? BufferId::Send : BufferId::Recv;
  if (v == 0) {
    have = b.copy(at(BufferId::Send, block(0)), at(BufferId::Recv, block(0)), block(0).count * e);
  } else {
    const Range mine = blocks(v, knomialSpan(n, v, 2));
    have = b.recv(real(links.parent), at(BufferId::Recv, mine), mine.count * e);
  }
  for (int c : links.children) {
    const int span = knomialSpan(n, c, 2);
    const Range r = blocks(c, span);
    const StepId sent = b.send(real(c), at(from, r), r.count * e, {v == 0 ? kNoStep : have});
    for (int u = c; u < c + span; ++u) sentBy[u] = sent;
  }

  // Ring allgather over virtual ranks: at step t send block v - t right, receive v - t - 1.
  const int right = real(v + 1), left = real(v - 1 + n);
  const uint64_t chunks = chunkCount(block(0).count, e, s.chunkBytes);
  std::vector<StepId> received(chunks, have);
  for (int t = 0; t < n - 1; ++t) {
    const int sendBlock = (v - t + n) % n, recvBlock = (v - t - 1 + 2 * n) % n;
    for (uint64_t j = 0; j < chunks; ++j) {
      const Range c = chunkOf(block(sendBlock), chunks, j);
      b.send(right, at(BufferId::Recv, c), c.count * e, {received[j]});
    }
    for (uint64_t j = 0; j < chunks; ++j) {
      const Range c = chunkOf(block(recvBlock), chunks, j);
      received[j] = b.recv(left, at(BufferId::Recv, c), c.count * e, {sentBy[recvBlock]});
    }
  }
  return std::move(b).finish();
}

}  // namespace weft
