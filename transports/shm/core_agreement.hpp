// Whether a host's ranks share cores: the CPUs they may run on, all affinity masks together,
// against how many ranks there are. Ranks that share cores must not spin while they wait, and
// the segment gives them larger slots (fewer phases, so fewer context switches per collective).
// Each rank's own mask is not enough: a launcher that binds every rank to one core (mpirun's
// default for two ranks) gives each rank one CPU without any sharing, and ranks with different
// masks would size the segment differently and take different paths through the same call.
// Masks do not show CPUs that other work keeps busy, so the number can be given instead
// (WEFT_SHM_CORES). A cgroup's CPU limit does not count: 2 ranks on 2 CPUs limited to one
// CPU's time took 1.8-2.0 us per 4 KiB allreduce spinning (throttled 74 times in 7 s), against
// 3.9-4.0 waiting as ranks that share a core.
#pragma once

#include "lib/base/deadline.hpp"
#include "transports/shm/segment.hpp"
#include "transports/transport.hpp"

namespace weft {

struct CoreAgreement {
  int cores = 0;                // CPUs in the union of the local ranks' masks
  bool oversubscribed = false;  // more local ranks than those CPUs
};

// Collective over `oob` (every rank of it calls this, local or not): each rank contributes its
// affinity mask and `givenCores` (WEFT_SHM_CORES; 0: none). The masks of `group`'s ranks are
// counted, unless some of them gave a number: then the smallest of those is the answer. The
// same answer on every local rank.
CoreAgreement agreeOnCores(OutOfBand& oob, const LocalGroup& group, int givenCores,
                           Deadline deadline);

}  // namespace weft
