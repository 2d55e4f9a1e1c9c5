// Direct gather and scatter: the root exchanges one message with every other rank.
#include "algorithms/algorithm.hpp"
#include "lib/base/error.hpp"

namespace weft {

Schedule buildDirect(const CollectiveShape& s) {
  if (s.collective != Collective::Gather && s.collective != Collective::Scatter)
    fail(weftInternalError, "direct has no schedule for {}", collectiveName(s.collective));
  ScheduleBuilder b;
  const uint64_t blockBytes = s.count * s.elemSize;
  const bool gather = s.collective == Collective::Gather;
  if (s.rank != s.root) {
    if (gather)
      b.send(s.root, {BufferId::Send, 0}, blockBytes);
    else
      b.recv(s.root, {BufferId::Recv, 0}, blockBytes);
    return std::move(b).finish();
  }
  // The root's large buffer is the receive buffer for gather and the send buffer for scatter.
  auto block = [&](BufferId buffer, int r) {
    return BufferRef{buffer, static_cast<uint64_t>(r) * blockBytes};
  };
  if (gather)
    b.copy({BufferId::Send, 0}, block(BufferId::Recv, s.root), blockBytes);
  else
    b.copy(block(BufferId::Send, s.root), {BufferId::Recv, 0}, blockBytes);
  for (int peer = 0; peer < s.nranks; ++peer) {
    if (peer == s.root) continue;
    if (gather)
      b.recv(peer, block(BufferId::Recv, peer), blockBytes);
    else
      b.send(peer, block(BufferId::Send, peer), blockBytes);
  }
  return std::move(b).finish();
}

}  // namespace weft
