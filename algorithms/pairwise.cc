// Pairwise-exchange alltoall: at step k (1..n-1) rank r sends block r+k to rank r+k and receives
// block r-k from rank r-k. Sends wait only for earlier sends and receives for earlier receives,
// a window of kWindow steps at a time, so no cycle of waits can form between ranks.
#include <vector>

#include "algorithms/algorithm.hpp"
#include "lib/base/error.hpp"

namespace weft {
namespace {
constexpr int kWindow = 8;
}

Schedule buildPairwise(const CollectiveShape& s) {
  if (s.collective != Collective::AlltoAll)
    fail(weftInternalError, "pairwise has no schedule for {}", collectiveName(s.collective));
  ScheduleBuilder b;
  const int n = s.nranks, r = s.rank;
  const uint64_t blockBytes = s.count * s.elemSize;
  auto at = [&](BufferId buffer, int block) {
    return BufferRef{buffer, static_cast<uint64_t>(block) * blockBytes};
  };
  b.copy(at(BufferId::Send, r), at(BufferId::Recv, r), blockBytes);
  // In place, a block may only be overwritten after it has been sent: receive into scratch and
  // copy into place once the send of that block is done.
  const uint64_t landing = s.inPlace ? b.allocateScratch(n * blockBytes) : 0;
  std::vector<StepId> sends(n, kNoStep), recvs(n, kNoStep);
  for (int k = 1; k < n; ++k) {
    const int to = (r + k) % n, from = (r - k + n) % n;
    const StepId earlierSend = k > kWindow ? sends[k - kWindow] : kNoStep;
    const StepId earlierRecv = k > kWindow ? recvs[k - kWindow] : kNoStep;
    sends[k] = b.send(to, at(BufferId::Send, to), blockBytes, {earlierSend});
    const BufferRef dst = s.inPlace ? BufferRef{BufferId::Scratch, landing + from * blockBytes}
                                    : at(BufferId::Recv, from);
    recvs[k] = b.recv(from, dst, blockBytes, {earlierRecv});
  }
  if (s.inPlace) {
    for (int k = 1; k < n; ++k) {
      const int from = (r - k + n) % n;
      // Block `from` of the buffer goes to rank `from`, at step n-k.
      b.copy({BufferId::Scratch, landing + from * blockBytes}, at(BufferId::Recv, from),
             blockBytes, {recvs[k], sends[n - k]});
    }
  }
  return std::move(b).finish();
}

}  // namespace weft
