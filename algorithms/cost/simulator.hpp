// The cost model: a schedule's cost is its replay. Every rank's schedule (the same builders the
// executor runs) is played out over a machine of hosts and links, event by event:
//   - a send starts a flow once its dependencies are done (messages above eagerBytes: and once
//     the matching receive is posted, as rendezvous protocols do); the flow shares bandwidth with
//     every other flow on the links it crosses (each flow gets the smallest fair share, capacity /
//     flows, of its links), and arrives `latency` after its last byte left;
//   - before its flow starts, a send occupies its rank's CPU for the link's messageUs;
//   - a receive completes at max(posted, arrived); receive-reduce, reduce and copy steps then
//     occupy the rank's CPU (one at a time, in order) for bytes / rate;
//   - the operation takes as long as its last step.
// With intraCopiedByReceiver (weft's shared memory), a rendezvous message inside a host is a
// copy on the receiver's CPU instead of a flow: it waits for that CPU like a reduction does.
// Links: a flow between ranks of one host uses the sender's intra-host egress and the receiver's
// intra-host ingress; a flow between hosts uses the two hosts' network egress and ingress (the
// ranks of a host share their host's network bandwidth). Rank r lives on host r / ranksPerHost.
//
// Scale: algorithms whose registry entry declares a symmetry (Rotation, Xor) are replayed for
// one representative rank per class: the ranks of host 0. A message to rank q of another host
// is delivered to q's representative as if it came from the sender's image (both classes and
// links map onto each other), so 4096 ranks cost as much as 8. Exact when blocks are equal;
// when the count does not divide evenly the representatives' block sizes stand for all (one
// element per message at most). Everything else (trees, chains, non-power-of-two folds) is
// replayed rank by rank.
//
// Long pipelines: a chunked schedule whose pipelines hold more than kReplayChunks chunks costs
// an affine function of the number of chunks once the pipeline has filled (each further chunk
// adds one period). It is replayed with the same chunk size at kReplayChunks / 2 and
// kReplayChunks chunks and the line through the two is extended to the real count. This is
// what keeps a 1 GiB allreduce over 4096 ranks in a double binary tree to a few hundred
// thousand replayed messages.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "algorithms/algorithm.hpp"

namespace weft {

struct LinkParams {
  double latencyUs = 1;
  double bandwidthGBps = 10;  // per direction, 1 GB = 1e9 B
  // The sending rank's CPU time per message on this link (posting it, the transport's protocol
  // work and system calls), one message at a time in order with its reductions and copies.
  // Latency overlaps with everything else and cannot make small chunks expensive; this does.
  double messageUs = 0;
};

// A machine described link by link (lib/topology builds it from the system picture): a message
// from rank a to rank b crosses the directed links route[a][b] (at most kMaxRouteLinks), each
// shared fairly among the flows on it. When a model has one, it replaces the intra and inter
// bandwidths; every message takes intra.latencyUs.
inline constexpr int kMaxRouteLinks = 8;
struct LinkRoutes {
  std::vector<double> capacityGBps;                      // per link, per direction
  std::vector<std::vector<std::vector<uint32_t>>> route;  // [from][to]: link indexes
};

struct MachineModel {
  int nranks = 1;
  int ranksPerHost = 1;
  LinkParams intra;            // between ranks of one host
  LinkParams inter;            // host to host (shared by the host's ranks)
  double reduceGBps = 0;       // bytes of one operand reduced per second per rank; 0: free
  double copyGBps = 0;         // local copies; 0: free
  uint64_t eagerBytes = 8192;  // larger messages wait for their receive (rendezvous)
  // weft's shared-memory transport: a larger message between ranks of one host is not a flow
  // on a link but a copy by the receiver's CPU (CMA, process_vm_readv), at intra.bandwidthGBps
  // once announced (intra.latencyUs), one at a time with the receiver's reductions and copies.
  bool intraCopiedByReceiver = false;
  const LinkRoutes* links = nullptr;  // not owned; null: ranks and hosts as above
};

// Pipelines longer than this many chunks are replayed at kReplayChunks / 2 and kReplayChunks
// chunks and extrapolated (see simulate()).
inline constexpr uint64_t kReplayChunks = 32;

struct SimOptions {
  bool full = false;   // replay every rank even when the algorithm is symmetric
  bool exact = false;  // replay every chunk of long pipelines too
  // Every send waits for its receive to be posted (rendezvous at any size). For deadlock
  // checks: a schedule that stalls here throws.
  bool rendezvous = false;
};

struct SimResult {
  double seconds = 0;
  uint64_t messages = 0;  // messages replayed (of the representatives, when symmetric)
  int replayedRanks = 0;
  bool symmetric = false;
  bool extrapolated = false;  // from two shorter pipelines
};

// Chunks in the longest pipeline of a chunked schedule (1 for schedules that do not chunk).
uint64_t pipelineChunks(const Algorithm& algorithm, const CollectiveShape& shape);

// shape.rank is ignored (every rank is built); shape.nranks must equal model.nranks. Throws
// Error (weftInternalError) when the schedules stall (a step never becomes ready).
SimResult simulate(const Algorithm& algorithm, const CollectiveShape& shape,
                   const MachineModel& model, SimOptions options = {});

// The same for schedules outside the registry (packed trees): `build` makes rank shape.rank's
// schedule. Every rank and every chunk is replayed (no symmetry, no extrapolation).
SimResult simulateSchedules(const std::function<Schedule(const CollectiveShape&)>& build,
                            const CollectiveShape& shape, const MachineModel& model,
                            SimOptions options = {});

}  // namespace weft
