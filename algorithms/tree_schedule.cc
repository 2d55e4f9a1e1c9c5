#include "algorithms/tree_schedule.hpp"

#include <algorithm>

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

TreePipeline::TreePipeline(ScheduleBuilder& b, const CollectiveShape& s, TreeFlow flow,
                           const TreeRole& role, Range range)
    : TreePipeline(b, s, flow, role, range, {}, kTreeWindow) {}

TreePipeline::TreePipeline(ScheduleBuilder& b, const CollectiveShape& s, TreeFlow flow,
                           const TreeRole& role, Range range, std::vector<Range> chunks,
                           uint64_t window)
    : b_(b), s_(s), flow_(flow), role_(role), range_(range), given_(std::move(chunks)) {
  const uint32_t e = s.elemSize;
  const size_t nc = role.children.size();
  chunks_ = given_.empty() ? chunkCount(range.count, e, s.chunkBytes) : given_.size();
  if (flow == TreeFlow::Broadcast) {
    if (role.parent < 0)
      b.copy({BufferId::Send, range.offset * e}, {BufferId::Recv, range.offset * e},
             range.count * e);
    return;
  }
  // Reduce and AllReduce. Partial sums live in the receive buffer, except on the inner ranks
  // of a Reduce, whose receive buffer NCCL lets be absent: there they live in scratch.
  scratchPartials_ = flow == TreeFlow::Reduce && role.parent >= 0 && nc > 0;
  partialBase_ = scratchPartials_ ? b.allocateScratch(range.count * e) : 0;
  maxChunk_ = (range.count + chunks_ - 1) / chunks_;
  for (const Range& c : given_) maxChunk_ = std::max(maxChunk_, c.count);
  window_ = std::clamp<uint64_t>(window, 1, chunks_);
  slotBase_ = nc > 0 ? b.allocateScratch(nc * window_ * maxChunk_ * e) : 0;
  consumed_.assign(nc, std::vector<StepId>(window_, kNoStep));
}

Range TreePipeline::chunk(uint64_t j) const {
  return given_.empty() ? chunkOf(range_, chunks_, j) : given_[j];
}

void TreePipeline::appendChunk(uint64_t j) {
  const uint32_t e = s_.elemSize;
  const bool root = role_.parent < 0;
  const size_t nc = role_.children.size();
  auto at = [&](BufferId id, Range c) { return BufferRef{id, c.offset * e}; };
  const Range c = chunk(j);
  if (c.count == 0 && !given_.empty()) return;  // a small part has no share of this round
  const uint64_t bytes = c.count * e;

  if (flow_ == TreeFlow::Broadcast) {
    StepId have = kNoStep;
    if (!root) have = b_.recv(role_.parent, at(BufferId::Recv, c), bytes);
    for (int child : role_.children)
      b_.send(child, at(root ? BufferId::Send : BufferId::Recv, c), bytes, {have});
    return;
  }

  auto partial = [&](Range r) {
    return scratchPartials_
               ? BufferRef{BufferId::Scratch, partialBase_ + (r.offset - range_.offset) * e}
               : at(BufferId::Recv, r);
  };
  auto slot = [&](size_t child, uint64_t k) {
    return BufferRef{BufferId::Scratch,
                     slotBase_ + (child * window_ + k % window_) * maxChunk_ * e};
  };
  StepId reduced = kNoStep;  // the last step that wrote this chunk's partial
  if (nc == 0 && root) reduced = b_.copy(at(BufferId::Send, c), at(BufferId::Recv, c), bytes);
  for (size_t i = 0; i < nc; ++i) {
    // consumed_[i][j % window]: the step that last read child i's slot for chunk j.
    StepId& slotFree = consumed_[i][j % window_];
    if (i == 0) {
      reduced = b_.recvReduce(role_.children[0], at(BufferId::Send, c), slot(0, j), partial(c),
                              bytes, {slotFree});
    } else {
      const StepId got = b_.recv(role_.children[i], slot(i, j), bytes, {slotFree});
      reduced = b_.reduce(partial(c), slot(i, j), partial(c), bytes, {reduced, got});
    }
    slotFree = reduced;
  }
  if (!root) {
    const BufferRef from = nc == 0 ? at(BufferId::Send, c) : partial(c);
    const StepId up = b_.send(role_.parent, from, bytes, {reduced});
    if (flow_ == TreeFlow::AllReduce) {
      // The result overwrites what was just sent up (or the input, in place).
      const StepId down = b_.recv(role_.parent, at(BufferId::Recv, c), bytes, {up});
      for (int child : role_.children) b_.send(child, at(BufferId::Recv, c), bytes, {down});
    }
  } else if (flow_ == TreeFlow::AllReduce) {
    for (int child : role_.children) b_.send(child, at(BufferId::Recv, c), bytes, {reduced});
  }
}

void appendTreeFlow(ScheduleBuilder& b, const CollectiveShape& s, TreeFlow flow,
                    const TreeRole& role, Range range) {
  TreePipeline pipeline(b, s, flow, role, range);
  for (uint64_t j = 0; j < pipeline.chunks(); ++j) pipeline.appendChunk(j);
}

}  // namespace weft
