// Pipelined chain: the ranks in order starting at the root. Broadcast flows root -> root+1 ->
// ... in chunks, each rank forwarding chunk j as soon as it has it; reduce flows the other way,
// each rank adding its contribution to chunk j before passing it on toward the root.
#include "algorithms/algorithm.hpp"
#include "algorithms/partition.hpp"
#include "lib/base/error.hpp"

namespace weft {
namespace {

struct Chain {
  int n, position, prev, next;  // prev/next: -1 at the ends
  explicit Chain(const CollectiveShape& s)
      : n(s.nranks), position((s.rank - s.root + s.nranks) % s.nranks),
        prev(position == 0 ? -1 : (s.rank + s.nranks - 1) % s.nranks),
        next(position == s.nranks - 1 ? -1 : (s.rank + 1) % s.nranks) {}
};

Schedule chainBroadcast(const CollectiveShape& s) {
  ScheduleBuilder b;
  const uint32_t e = s.elemSize;
  const Chain chain(s);
  const uint64_t chunks = chunkCount(s.count, e, s.chunkBytes);
  if (chain.position == 0) b.copy({BufferId::Send, 0}, {BufferId::Recv, 0}, s.count * e);
  for (uint64_t j = 0; j < chunks; ++j) {
    const Range c = chunkOf({0, s.count}, chunks, j);
    const uint64_t at = c.offset * e, bytes = c.count * e;
    StepId have = kNoStep;
    if (chain.prev >= 0) have = b.recv(chain.prev, {BufferId::Recv, at}, bytes);
    if (chain.next >= 0) {
      const BufferId from = chain.prev >= 0 ? BufferId::Recv : BufferId::Send;
      b.send(chain.next, {from, at}, bytes, {have});
    }
  }
  return std::move(b).finish();
}

// Non-root ranks never touch the receive buffer (NCCL allows it to be NULL there): partial sums
// are built in scratch.
Schedule chainReduce(const CollectiveShape& s) {
  ScheduleBuilder b;
  const uint32_t e = s.elemSize;
  const Chain chain(s);
  if (chain.n == 1) {
    b.copy({BufferId::Send, 0}, {BufferId::Recv, 0}, s.count * e);
    return std::move(b).finish();
  }
  const uint64_t chunks = chunkCount(s.count, e, s.chunkBytes);
  const bool last = chain.next < 0, root = chain.prev < 0;
  const uint64_t partials = last ? 0 : b.allocateScratch(s.count * e);
  for (uint64_t j = 0; j < chunks; ++j) {
    const Range c = chunkOf({0, s.count}, chunks, j);
    const uint64_t at = c.offset * e, bytes = c.count * e;
    if (last) {
      b.send(chain.prev, {BufferId::Send, at}, bytes);
      continue;
    }
    const BufferRef tmp{BufferId::Scratch, partials + at};
    const BufferRef out = root ? BufferRef{BufferId::Recv, at} : tmp;
    const StepId reduced = b.recvReduce(chain.next, {BufferId::Send, at}, tmp, out, bytes);
    if (!root) b.send(chain.prev, tmp, bytes, {reduced});
  }
  return std::move(b).finish();
}

}  // namespace

Schedule buildChain(const CollectiveShape& s) {
  switch (s.collective) {
    case Collective::Broadcast: return chainBroadcast(s);
    case Collective::Reduce: return chainReduce(s);
    default: fail(weftInternalError, "chain has no schedule for {}", collectiveName(s.collective));
  }
}

}  // namespace weft
