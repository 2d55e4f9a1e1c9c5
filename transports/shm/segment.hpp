// The shared-memory segment of one communicator on one host: a header, per local rank a few
// control lines (SharedFlag) and two data slots (double buffering), and optionally a mailbox
// per ordered pair of local ranks for point-to-point messages.
//
// The first rank of each host creates it (named from the communicator id and that rank, mode
// 0600, space reserved up front so a full /dev/shm is an error, not a SIGBUS), every rank of the
// host maps it, and it is unlinked as soon as all have: nothing is left behind, whatever
// happens next.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/deadline.hpp"
#include "transports/shm/flag.hpp"
#include "transports/transport.hpp"

namespace weft {

// The ranks of a communicator that share this host (and so can share memory).
struct LocalGroup {
  std::vector<int> ranks;  // global ranks, ascending
  std::vector<pid_t> pids;
  int me = 0;              // my index in `ranks`
  bool oneProcess = false; // every local rank is a thread of this process

  int size() const { return static_cast<int>(ranks.size()); }
};

// A flag whose payload goes on past its own line: the flag's 56 bytes, then `more`, one run of
// kBytes (data()).
struct InlineBlock {
  static constexpr size_t kMoreBytes = 16 << 10;
  static constexpr size_t kBytes = sizeof(SharedFlag::payload) + kMoreBytes;
  SharedFlag flag;
  uint8_t more[kMoreBytes];

  uint8_t* data() { return reinterpret_cast<uint8_t*>(this) + offsetof(SharedFlag, payload); }
  const uint8_t* data() const {
    return reinterpret_cast<const uint8_t*>(this) + offsetof(SharedFlag, payload);
  }
};
static_assert(offsetof(SharedFlag, payload) + sizeof(SharedFlag::payload) == sizeof(SharedFlag));
static_assert(offsetof(InlineBlock, more) == sizeof(SharedFlag));

// Per local rank: the lines other ranks watch.
struct RankControl {
  SharedFlag progress;  // phase counter of native collectives (algorithms/shm)
  // Where this rank's buffers of the current collective are, for peers that read them in
  // place: two cache lines per call, double-buffered by call (algorithms/shm).
  alignas(64) uint8_t exposure[2][128];
  // Small payloads published with their own sequence number: in the flag's line and the lines
  // right after it, so a reader gets flag and data in one run of lines; double-buffered by
  // call (algorithms/shm).
  InlineBlock inlined[2];
  // The CPU this rank ran its latest native collective on (sched_getcpu; -1 before the first).
  // A waiter on that same CPU knows the rank cannot be running: it yields instead of spinning
  // (transports/shm/flag.hpp); a rank crowded onto one CPU moves (algorithms/shm/cpu_spread).
  alignas(64) std::atomic<int32_t> cpu{-1};
  // When this rank started its latest native collective, and which one it was (for the path
  // trials' timing: algorithms/shm/path_trials.hpp, callStartStamp). Read by peers only at the
  // end of trial calls.
  alignas(64) std::atomic<uint64_t> callStart{0};
  // Non-zero while this rank sleeps in the shm transport's waitForActivity and wants a doorbell
  // when a peer publishes anything to it (transports/shm/README.md, "Sleeping").
  alignas(64) std::atomic<uint32_t> asleep;
};

struct SegmentGeometry {
  int nlocal = 1;
  uint64_t slotBytes = 0;     // each of a rank's two slots
  uint64_t mailboxBytes = 0;  // per ordered pair; 0: no mailboxes
  uint64_t controlOffset = 0, slotsOffset = 0, mailboxesOffset = 0, totalBytes = 0;

  static SegmentGeometry make(int nlocal, uint64_t slotBytes, uint64_t mailboxBytes);
};

class ShmSegment {
 public:
  // Collective over `oob` (every rank of the communicator, on every host). `baseName` is unique
  // per communicator (e.g. its id in hex). Throws weftSystemError naming the rank and the
  // failed call, on every rank of a host where anything failed.
  static std::unique_ptr<ShmSegment> create(OutOfBand& oob, const LocalGroup& group,
                                            const std::string& baseName,
                                            const SegmentGeometry& geometry, Deadline deadline);
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  const SegmentGeometry& geometry() const { return geometry_; }
  // "/weft-<baseName>-<leader rank>": unique on this host while the communicator lives.
  const std::string& name() const { return name_; }
  RankControl& control(int local) const;
  // Flags shared by all local ranks (not owned by one), index < kHostFlags.
  static constexpr int kHostFlags = 8;
  SharedFlag& hostFlag(int index) const;
  uint8_t* slot(int local, int which) const;
  uint8_t* mailbox(int from, int to) const;

 private:
  ShmSegment(uint8_t* base, SegmentGeometry geometry, std::string name)
      : base_(base), geometry_(geometry), name_(std::move(name)) {}
  uint8_t* base_;
  SegmentGeometry geometry_;
  std::string name_;
};

// Slot size for `nlocal` ranks. With a core each, the slots of every rank together (two each)
// take four times this core's L2 cache (hwloc's figure), between 32 KiB and 1 MiB per slot: on
// 2 ranks, slots of one L2 each. They were a quarter of that (each rank's chunk of a collective
// within the L2 together). On the 2-core AMD EPYC build machine (512 KiB L2 per core), weft-perf
// on 2 ranks against 539db37, 9 alternating launches of 200 calls after 500 warm-up ones,
// medians, time with 512 KiB slots over 128 KiB at 1 MiB: allreduce 0.99, allgather 0.89,
// alltoall 0.75, reduce-scatter 0.67, broadcast 0.70 (0.85 in place); at 4 MiB allreduce 0.93,
// allgather 0.94; at 256 KiB 0.80-0.96; weftMemAlloc buffers 0.97-1.02. In shorter runs, 256
// KiB slots took 1.13x the time of 512 KiB on a 1 MiB broadcast, and 1 MiB slots 1.24x (one
// piece: no pipeline). Only 2 ranks could be measured there. Ranks that share cores
// (core_agreement.hpp) take 8 MiB of slots in all, between that and 1 MiB per slot: every phase
// of a collective costs them a context switch, so fewer, larger chunks win over cache-sized
// ones.
uint64_t defaultSlotBytes(int nlocal, bool oversubscribed);

}  // namespace weft
