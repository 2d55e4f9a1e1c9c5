#include "algorithms/tree_schedule.hpp"

#include "lib/base/error.hpp"

namespace weft {

TreeRole realRole(int parent, const std::vector<int>& children, int root, int nranks) {
  auto real = [&](int v) { return v < 0 ? -1 : (v + root) % nranks; };
  TreeRole role;
  role.parent = real(parent);
  for (int c : children) role.children.push_back(real(c));
  return role;
}

TreeFlow treeFlowFor(Collective c) {
  switch (c) {
    case Collective::AllReduce: return TreeFlow::AllReduce;
    case Collective::Broadcast: return TreeFlow::Broadcast;
    case Collective::Reduce: return TreeFlow::Reduce;
    default: fail(weftInternalError, "trees have no schedule for {}", collectiveName(c));
  }
}

void appendTreeFlow(ScheduleBuilder& b, const CollectiveShape& s, TreeFlow flow,
                    const TreeRole& role, Range range) {
  const uint32_t e = s.elemSize;
  const bool root = role.parent < 0;
  const size_t nc = role.children.size();
  const uint64_t chunks = chunkCount(range.count, e, s.chunkBytes);
  auto at = [&](BufferId id, Range c) { return BufferRef{id, c.offset * e}; };

  if (flow == TreeFlow::Broadcast) {
    if (root) b.copy(at(BufferId::Send, range), at(BufferId::Recv, range), range.count * e);
    for (uint64_t j = 0; j < chunks; ++j) {
      const Range c = chunkOf(range, chunks, j);
      StepId have = kNoStep;
      if (!root) have = b.recv(role.parent, at(BufferId::Recv, c), c.count * e);
      for (int child : role.children)
        b.send(child, at(root ? BufferId::Send : BufferId::Recv, c), c.count * e, {have});
    }
    return;
  }

  // Reduce and AllReduce. Partial sums live in the receive buffer, except on the inner ranks
  // of a Reduce, whose receive buffer NCCL lets be absent: there they live in scratch.
  const bool scratchPartials = flow == TreeFlow::Reduce && !root && nc > 0;
  const uint64_t partialBase = scratchPartials ? b.allocateScratch(range.count * e) : 0;
  auto partial = [&](Range c) {
    return scratchPartials
               ? BufferRef{BufferId::Scratch, partialBase + (c.offset - range.offset) * e}
               : at(BufferId::Recv, c);
  };
  const uint64_t maxChunk = (range.count + chunks - 1) / chunks;
  const uint64_t window = std::min<uint64_t>(kTreeWindow, chunks);
  const uint64_t slotBase = nc > 0 ? b.allocateScratch(nc * window * maxChunk * e) : 0;
  auto slot = [&](size_t child, uint64_t j) {
    return BufferRef{BufferId::Scratch, slotBase + (child * window + j % window) * maxChunk * e};
  };
  // consumed[i][j % window]: the step that last read child i's slot for chunk j.
  std::vector<std::vector<StepId>> consumed(nc, std::vector<StepId>(window, kNoStep));

  for (uint64_t j = 0; j < chunks; ++j) {
    const Range c = chunkOf(range, chunks, j);
    const uint64_t bytes = c.count * e;
    StepId reduced = kNoStep;  // the last step that wrote this chunk's partial
    if (nc == 0 && root) reduced = b.copy(at(BufferId::Send, c), at(BufferId::Recv, c), bytes);
    for (size_t i = 0; i < nc; ++i) {
      StepId& slotFree = consumed[i][j % window];
      if (i == 0) {
        reduced = b.recvReduce(role.children[0], at(BufferId::Send, c), slot(0, j), partial(c),
                               bytes, {slotFree});
      } else {
        const StepId got = b.recv(role.children[i], slot(i, j), bytes, {slotFree});
        reduced = b.reduce(partial(c), slot(i, j), partial(c), bytes, {reduced, got});
      }
      slotFree = reduced;
    }
    if (!root) {
      const BufferRef from = nc == 0 ? at(BufferId::Send, c) : partial(c);
      const StepId up = b.send(role.parent, from, bytes, {reduced});
      if (flow == TreeFlow::AllReduce) {
        // The result overwrites what was just sent up (or the input, in place).
        const StepId down = b.recv(role.parent, at(BufferId::Recv, c), bytes, {up});
        for (int child : role.children) b.send(child, at(BufferId::Recv, c), bytes, {down});
      }
    } else if (flow == TreeFlow::AllReduce) {
      for (int child : role.children) b.send(child, at(BufferId::Recv, c), bytes, {reduced});
    }
  }
}

}  // namespace weft
