// Point-to-point operations as one-step schedules, so that groups of sends, receives and
// collectives all run through the same executor.
#include "algorithms/algorithm.hpp"

namespace weft {

Schedule buildSend(int peer, uint64_t bytes) {
  ScheduleBuilder b;
  b.send(peer, {BufferId::Send, 0}, bytes);
  return std::move(b).finish();
}

Schedule buildRecv(int peer, uint64_t bytes) {
  ScheduleBuilder b;
  b.recv(peer, {BufferId::Recv, 0}, bytes);
  return std::move(b).finish();
}

Schedule buildSelfCopy(uint64_t bytes) {
  ScheduleBuilder b;
  b.copy({BufferId::Send, 0}, {BufferId::Recv, 0}, bytes);
  return std::move(b).finish();
}

}  // namespace weft
