#include "transports/shm/core_agreement.hpp"

#include <sched.h>

#include <algorithm>
#include <cstring>

namespace weft {

CoreAgreement agreeOnCores(OutOfBand& oob, const LocalGroup& group, Deadline deadline) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) CPU_SET(std::max(0, sched_getcpu()), &mask);
  const auto* bytes = reinterpret_cast<const uint8_t*>(&mask);
  const std::vector<std::vector<uint8_t>> all =
      oob.allGather(std::span<const uint8_t>(bytes, sizeof mask), deadline);
  cpu_set_t together;
  CPU_ZERO(&together);
  for (int r : group.ranks) {
    cpu_set_t theirs;
    CPU_ZERO(&theirs);
    std::memcpy(&theirs, all[r].data(), std::min(all[r].size(), sizeof theirs));
    CPU_OR(&together, &together, &theirs);
  }
  CoreAgreement agreed;
  agreed.cores = CPU_COUNT(&together);
  agreed.oversubscribed = group.size() > agreed.cores;
  return agreed;
}

}  // namespace weft
