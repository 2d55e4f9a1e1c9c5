// Bruck's algorithms, for small messages: ceil(log2 n) rounds whatever n is.
//
// Allgather: in round k (distance d = 2^k) rank r sends the blocks it has, r .. r+d-1 (at most
// n-d of them), to rank r-d and receives blocks r+d .. from rank r+d. Blocks are placed at their
// final offsets straight away, so there is no final rotation; a run of blocks that wraps past
// n-1 travels as two messages (both ends cut it the same way).
//
// Alltoall: position i (0..n-1) starts as the block this rank sends to rank r+i. In round k every
// position with bit k set is packed into one message to rank r+d, and the same positions are
// refilled from rank r-d. After the last round position i holds the block rank r-i sent to r.
// Packing and unpacking are copies through scratch (position i lives in `slots` once it has
// arrived); the pack and landing areas alternate between two sets so a round can pack while the
// previous one's message is still in flight.
#include <algorithm>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "lib/base/error.hpp"

namespace weft {
namespace {

Schedule allGather(const CollectiveShape& s) {
  ScheduleBuilder b;
  const int n = s.nranks, r = s.rank;
  const uint64_t bb = s.count * s.elemSize;
  auto block = [&](int i) { return BufferRef{BufferId::Recv, static_cast<uint64_t>(i) * bb}; };
  StepId have = b.copy({BufferId::Send, 0}, block(r), bb);
  // Blocks first .. first+count-1 (mod n) as runs contiguous in the buffer.
  auto runs = [&](int first, int count, auto&& message) {
    first %= n;
    const int head = std::min(count, n - first);
    message(first, head);
    if (count > head) message(0, count - head);
  };
  for (int d = 1; d < n; d *= 2) {
    const int count = std::min(d, n - d);
    const int to = (r - d + n) % n, from = (r + d) % n;
    runs(r, count, [&](int first, int c) { b.send(to, block(first), c * bb, {have}); });
    StepId round = have;
    runs(r + d, count, [&](int first, int c) {
      const StepId got = b.recv(from, block(first), c * bb);
      round = b.copy(block(r), block(r), 0, {round, got});
    });
    have = round;
  }
  return std::move(b).finish();
}

Schedule alltoall(const CollectiveShape& s) {
  ScheduleBuilder b;
  const int n = s.nranks, r = s.rank;
  const uint64_t bb = s.count * s.elemSize;
  auto sendBlock = [&](int i) { return BufferRef{BufferId::Send, static_cast<uint64_t>(i) * bb}; };
  auto recvBlock = [&](int i) { return BufferRef{BufferId::Recv, static_cast<uint64_t>(i) * bb}; };
  if (n == 1) {
    b.copy(sendBlock(0), recvBlock(0), bb);
    return std::move(b).finish();
  }
  int most = 0;  // positions moved in one round, at most
  for (int d = 1; d < n; d *= 2) {
    int moved = 0;
    for (int i = 1; i < n; ++i) moved += (i & d) != 0;
    most = std::max(most, moved);
  }
  const uint64_t slots = b.allocateScratch(n * bb);
  uint64_t pack[2], land[2];
  for (int p = 0; p < 2; ++p) {
    pack[p] = b.allocateScratch(most * bb);
    land[p] = b.allocateScratch(most * bb);
  }
  auto slot = [&](int i) { return BufferRef{BufferId::Scratch, slots + i * bb}; };
  std::vector<bool> arrived(n, false);
  std::vector<StepId> wrote(n, kNoStep);      // last step that filled position i's slot
  std::vector<StepId> firstRead(n, kNoStep);  // the pack that read position i from the input
  StepId packFree[2] = {kNoStep, kNoStep}, landFree[2] = {kNoStep, kNoStep};
  int round = 0;
  for (int d = 1; d < n; d *= 2, ++round) {
    const int p = round % 2;
    std::vector<int> moved;
    for (int i = 1; i < n; ++i)
      if (i & d) moved.push_back(i);
    StepId packed = packFree[p];
    for (size_t m = 0; m < moved.size(); ++m) {
      const int i = moved[m];
      const BufferRef from = arrived[i] ? slot(i) : sendBlock((r + i) % n);
      packed = b.copy(from, {BufferId::Scratch, pack[p] + m * bb}, bb, {packed, wrote[i]});
      if (!arrived[i]) firstRead[i] = packed;
    }
    const uint64_t bytes = moved.size() * bb;
    packFree[p] = b.send((r + d) % n, {BufferId::Scratch, pack[p]}, bytes, {packed});
    const StepId got = b.recv((r - d + n) % n, {BufferId::Scratch, land[p]}, bytes, {landFree[p]});
    StepId unpacked = got;
    for (size_t m = 0; m < moved.size(); ++m) {
      const int i = moved[m];
      // The slot may still be read by this round's pack (the same positions move both ways).
      unpacked = b.copy({BufferId::Scratch, land[p] + m * bb}, slot(i), bb, {unpacked, packed});
      wrote[i] = unpacked;
      arrived[i] = true;
    }
    landFree[p] = unpacked;
  }
  // Position i now holds the block from rank r-i. In place, the output block r-i is the input
  // block of position n-i: it must have been packed first.
  b.copy(sendBlock(r), recvBlock(r), bb);
  for (int i = 1; i < n; ++i)
    b.copy(slot(i), recvBlock((r - i + n) % n), bb, {wrote[i], firstRead[(n - i) % n]});
  return std::move(b).finish();
}

}  // namespace

Schedule buildBruck(const CollectiveShape& s) {
  switch (s.collective) {
    case Collective::AllGather: return allGather(s);
    case Collective::AlltoAll: return alltoall(s);
    default: fail(weftInternalError, "bruck has no schedule for {}", collectiveName(s.collective));
  }
}

}  // namespace weft
