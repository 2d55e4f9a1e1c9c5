// Launching operations: a call outside a group, or everything between weftGroupStart and
// weftGroupEnd. Operations are gathered per communicator into one task that takes the
// communicator's next turn; every communicator's task then runs in one execution (all its
// sends, receives and collectives in flight together, which is why matched send/receive
// groups never deadlock). Tasks on a NULL stream run now, in this thread, interleaved; tasks on
// a host stream are queued there.
#pragma once

#include <memory>
#include <vector>

#include "lib/enqueue/operation.hpp"

namespace weft {

class Comm;
class HostStream;

struct Submission {
  std::shared_ptr<Comm> comm;
  Operation op;
  std::shared_ptr<HostStream> stream;  // null: run now, in the calling thread
};

// Throws Error for operations that cannot start and, for the NULL-stream part, when running
// fails. Every communicator involved in a failed run is marked failed.
void launch(std::vector<Submission> submissions);

// The common call of a framework or a benchmark, outside a group: one collective that the
// native shared-memory code runs, or any collective without scaling on one rank (a copy).
// Runs it (NULL stream) or queues it on its stream without the planning that groups and
// schedules need (a few allocations and locks: a fifth of a small allreduce's time), and
// returns true; returns false, having done nothing, for any other submission.
bool launchNative(const Submission& submission);

}  // namespace weft
