#include "transports/shm/core_agreement.hpp"

#include <sched.h>

#include <algorithm>
#include <cstring>

namespace weft {

namespace {

// What each rank contributes.
struct CoreBlob {
  int32_t givenCores;
  cpu_set_t mask;
};

}  // namespace

CoreAgreement agreeOnCores(OutOfBand& oob, const LocalGroup& group, int givenCores,
                           Deadline deadline) {
  CoreBlob mine{};
  mine.givenCores = std::max(0, givenCores);
  CPU_ZERO(&mine.mask);
  if (sched_getaffinity(0, sizeof mine.mask, &mine.mask) != 0)
    CPU_SET(std::max(0, sched_getcpu()), &mine.mask);
  const auto* bytes = reinterpret_cast<const uint8_t*>(&mine);
  const std::vector<std::vector<uint8_t>> all =
      oob.allGather(std::span<const uint8_t>(bytes, sizeof mine), deadline);
  cpu_set_t together;
  CPU_ZERO(&together);
  int given = 0;
  for (int r : group.ranks) {
    CoreBlob theirs{};
    std::memcpy(&theirs, all[r].data(), std::min(all[r].size(), sizeof theirs));
    CPU_OR(&together, &together, &theirs.mask);
    if (theirs.givenCores > 0)
      given = given == 0 ? theirs.givenCores : std::min(given, theirs.givenCores);
  }
  CoreAgreement agreed;
  agreed.cores = given > 0 ? given : CPU_COUNT(&together);
  agreed.oversubscribed = group.size() > agreed.cores;
  return agreed;
}

}  // namespace weft
