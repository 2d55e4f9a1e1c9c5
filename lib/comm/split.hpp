// New communicators from an existing one: split by color (every rank of the parent takes part)
// and shrink (the survivors of a failure leave out the dead).
#pragma once

#include <memory>
#include <span>

#include "lib/comm/comm.hpp"

namespace weft {

// Collective over the parent. Ranks with the same color form a communicator, ordered by (key,
// parent rank); color < 0 (WEFT_SPLIT_NOCOLOR) takes part but gets none (null). The parent must
// be usable.
std::shared_ptr<Comm> splitComm(Comm& parent, int color, int key, const CommConfig& config,
                                Comm::AbortFlag abortFlag);

// Called by every rank not in `exclude`: they form a communicator, in parent-rank order,
// rendezvousing over the parent's transport (which still connects survivors after a peer died;
// the bootstrap ring may not). Works on a failed parent. With abortFirst, operations still
// running on the parent are stopped first (WEFT_SHRINK_ABORT).
std::shared_ptr<Comm> shrinkComm(Comm& parent, std::span<const int> exclude, bool abortFirst,
                                 const CommConfig& config, Comm::AbortFlag abortFlag);

}  // namespace weft
