// Native intra-host collectives: every rank of the communicator shares this host, and the
// collectives run on the shared-memory segment directly instead of as schedules over a
// transport (DESIGN.md: hot paths a schedule interpreter cannot serve, behind the same
// interface).
//
// Ranks move through the same sequence of phases; after each phase a rank publishes its phase
// count on its progress flag, and a rank that needs a peer's data waits for that peer's flag.
// Data moves in one of three ways, decided per call identically on every rank:
// - staged: each rank copies its input into its own slot of the segment (double-buffered,
//   cache-sized chunks) and peers read the slots; works for any buffers;
// - direct: peers read each other's buffers in place (ranks that are threads of one process, or
//   buffers from weftMemAlloc, which every local rank maps); no staging copy;
// - cma: ranks copy between each other's buffers with process_vm_readv (inputs) and
//   process_vm_writev (outputs): one copy, no staging.
// Small allreduces are one-shot: every rank reduces every rank's staged copy.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/partition.hpp"
#include "algorithms/reduce/reduce.hpp"
#include "algorithms/schedule.hpp"
#include "algorithms/shm/path_trials.hpp"
#include "transports/shm/core_agreement.hpp"
#include "transports/shm/flag.hpp"
#include "transports/shm/memory.hpp"
#include "transports/shm/segment.hpp"

namespace weft {

enum class ShmMode : uint8_t { Auto, Staged, Cma };

struct NativeCall {
  Collective collective = Collective::AllReduce;
  // Null where the collective ignores the buffer on this rank (a non-root's input to
  // broadcast and scatter, its output of reduce and gather).
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  uint64_t count = 0;        // the API's count
  uint32_t elemSize = 1;
  ReduceFn reduce = nullptr; // reducing collectives
  ReduceManyFn reduceMany = nullptr;  // the same, several sources at a time
  int root = 0;              // local index (the communicator is single-host)
  bool inPlace = false;      // NCCL's in-place form
};

// How a peer's buffers can be reached: what every rank publishes at the start of a call that
// may avoid staging.
struct Exposure {
  uint64_t send = 0, recv = 0;  // addresses in the owner's address space
  uint32_t pid = 0;
  uint32_t flags = 0;           // kSendShared/kRecvShared: inside weftMemAlloc memory
  // Deciding a path (path_trials.hpp): my medians.
  double trialStaged = 0, trialCma = 0, trialCached = 0;
  RegionRef sendRegion, recvRegion;
};
static_assert(sizeof(Exposure) <= 128);

class ShmCollectives {
 public:
  // `cores`: what the local ranks agreed on before the segment was sized (agreeOnCores). Ranks
  // that share cores have small allreduces cost as few wake-ups as possible
  // (allReduceLastArriver).
  // `cmaCost`: what a CMA copy costs in memcpys (WEFT_SHM_CMA_COST), the same on every rank;
  // 0: setUp measures it. `spread` (WEFT_SHM_SPREAD): a rank crowded onto one CPU with others
  // moves to a less crowded one before a collective (cpu_spread.hpp). `tune` (WEFT_SHM_TUNE):
  // where CMA works, the cost was measured rather than given and the mode is auto, processes
  // with private buffers time staging against CMA on the first calls of each size
  // (path_trials.hpp) instead of going by the measured cost.
  ShmCollectives(ShmSegment& segment, const LocalGroup& group, ShmMode mode, CoreAgreement cores,
                 double cmaCost = 0, bool spread = true, bool tune = true);
  // Collective over the local ranks, once, before the first run. Finds out whether CMA works
  // between them (it may not: Yama's ptrace_scope, seccomp), so every rank decides alike.
  void setUp(const WaitContext& wait);
  bool cmaWorks() const { return cmaWorks_; }
  // The CPUs the local ranks may run on, all masks together, and whether the ranks outnumber
  // them (the same answer on every rank).
  int cores() const { return cores_; }
  bool oversubscribed() const { return oversubscribed_; }

  static bool serves(Collective c);
  // Runs one collective to completion. Throws on timeout, abort or a dead peer (from
  // waitFor), leaving the segment unusable (the communicator is failed then).
  void run(const NativeCall& call, const WaitContext& wait);

  // Allreduces (bytes per rank) up to this size travel with their flag (allReduceInline)
  // where every rank has a core ...
  static constexpr uint64_t kInlineBytes = InlineBlock::kBytes;
  // ... and beyond it go one-shot, when every rank has a core, as long as each rank reads at
  // most this much: one phase instead of the three of reduce-scatter + allgather.
  // perf/compare, 2 ranks, 9 alternating repetitions: 0.65x the time at 32 KiB, 0.8x at 64 KiB,
  // equal at 128 KiB.
  static constexpr uint64_t kOneShotReadBytes = 128 << 10;
  // Ranks that read each other's buffers in place (threads, weftMemAlloc buffers), every one
  // with a core and none in place: allreduces where each rank reads at most this much have every
  // rank reduce every input straight into its output (one pass, no staging copy).
  // It reads 2N bytes per rank for N written; allReducePeerRead reads N and writes N, also in
  // one phase. 2 ranks, weft-perf -R 1, 7 alternating runs, medians, one-shot over peer read:
  // 0.95 at 256 KiB, 1.08 at 512 KiB, 1.16 at 1 MiB, 1.25 at 2 MiB.
  static constexpr uint64_t kDirectOneShotReadBytes = 512 << 10;
  // Ranks that outnumber the cores: small allreduces have one rank reduce (allReduceLastArriver)
  // up to this size.
  static constexpr uint64_t kLastArriverBytes = 16 << 10;
  // Other collectives read peers' buffers in place (direct or CMA) above this many bytes per
  // block (2 ranks: from it on), and stage through the slots below.
  static constexpr uint64_t kPeerReadFromBytes = 16 << 10;
  // Broadcast, allgather, alltoall, gather and scatter stage at most this much of a block per
  // phase, and reduce this much of its input, whatever the slot size. Slots of one L2 (1 MiB
  // on 2 ranks of the AMD EPYC VM, defaultSlotBytes; 1 MiB for ranks that share cores) made a
  // piece the whole slot. There, staged, weft-perf, 3 alternating runs, medians, time with
  // 512 KiB pieces over 1 MiB at 1, 4 and 16 MiB (ca7cbb9 with a temporary switch; reduce:
  // 512 KiB slots against 1 MiB): 2 ranks broadcast 0.23-0.24, allgather 1.01, 0.40, 0.42,
  // alltoall 1.05, 0.43, 0.56, reduce 0.43, 0.41, 0.61; 4 ranks broadcast 0.44-0.50,
  // allgather 1.00, 0.60, 0.58, alltoall 0.96-1.01 (pieces of a third of the slot already),
  // reduce 0.50, 0.47, 0.69. 256 KiB slots against 512 KiB on 2 ranks: 0.97-1.06 for the
  // movement (alltoall 0.80 at 16 MiB), 1.04-1.09 for reduce-scatter. Reduce-scatter and
  // allreduce keep their pieces (each rank stages the other slices only): 512 KiB slots
  // against 1 MiB took them 0.93-1.01 (allreduce) and 1.01-1.14 (reduce-scatter) on 2 ranks,
  // and 1.03-1.10 on 4.
  static constexpr uint64_t kStagePieceBytes = 512 << 10;
  // What alltoAllSwap holds at a time while it swaps two blocks.
  static constexpr uint64_t kSwapPieceBytes = 16 << 10;

 private:
  enum class Path { Staged, Direct, Cma };

  // Phases.
  void arrive();
  void waitPeer(int q, uint32_t phase) const;
  void waitAll(uint32_t phase) const;
  int me() const { return group_.me; }
  int n() const { return group_.size(); }
  uint8_t* slot(int q, int parity) const { return segment_.slot(q, parity); }
  // Whether an allreduce of `bytes` per rank between two processes reads the peer through CMA
  // where it would otherwise go one-shot (allreduce.cc). The same answer on every rank.
  bool cmaPairAllReduce(uint64_t bytes) const;
  // Moves this rank off a CPU it shares with more local ranks than their share (cpu_spread.hpp).
  void spreadOut(int32_t now);
  // How much of its slice allReducePeerRead reduces at a time. Through CMA half a slot: the
  // kernel's copy, the own input and the output piece then stay in cache together. 2 ranks
  // bound to cores, out of place, 5 alternating runs: 512 KiB pieces took 0.84-0.91x the time
  // of 1 MiB ones at 4-8 MiB (1.08 at 1 MiB, within the noise), 256 KiB ones 1.02-1.15x.
  uint64_t peerReadPieceBytes(Path path) const {
    const uint64_t slotBytes = segment_.geometry().slotBytes;
    return path == Path::Cma ? slotBytes / 2 : slotBytes;
  }
  // The parity of the next staging slot, after waiting until every rank has stopped reading it.
  int claimSlot();
  // Once every peer has reached the current chunk, none reads my other slot any more: asks for
  // `bytes` at `offset` of my slot `parity` owned for writing (prefetchForWrite), while waiting
  // costs nothing, so that the next chunk's copy into it does not stall on lines the peers hold
  // from reading them. Only where a rank stages at most kReclaimSlotBytes per chunk (the caller
  // checks).
  void reclaimSlot(int parity, uint64_t offset, uint64_t bytes);
  // 2 processes, 5 alternating launches of 5000-20000 calls against 22b911d, medians, time
  // with over without: the one-shot allreduce of the time (small allreduces are inline now, and
  // take their blocks back the same way) 0.84 at 4 KiB (0.88 in place), 0.88-0.93 at 256 B-1
  // KiB, 0.89-0.92 at 8 KiB, 0.99 at 12 KiB, 1.21 at 64 KiB; allgather and alltoall 0.74-0.77
  // at 4 KiB, 0.87-0.89 at 8 KiB, 0.96 at 16 KiB (8 KiB staged), 1.01 at 32 KiB; 4 ranks,
  // 8 KiB, 0.83-0.84; reduce-scatter 1.01-1.03 at 8 KiB and 0.95 at 16 KiB, 4 ranks 0.74 at 8
  // KiB. Broadcast and gather stage on one rank only, which does not learn when the others
  // are done. Reduce (0.98 at 4 KiB, 1.13 at 8 KiB) and the last-arriver allreduce (ranks
  // sharing cores, 1.10-1.13) took longer with it, and do not.
  static constexpr uint64_t kReclaimSlotBytes = 8 << 10;
  // Staged pieces of at least this size are copied into the slot with streaming stores where
  // every rank has a core (moveStaged).
  static constexpr uint64_t kStreamStageBytes = 128 << 10;
  // Done with slot `parity` at the current phase. `readLater`: a peer may read it until it has
  // passed this phase (claimSlot then waits for every rank); false where no peer reads it any
  // more (claimSlot then need not wait).
  void releaseSlot(int parity, bool readLater = true);

  // Agrees with the peers on a path for this call: publishes this rank's exposure, waits for
  // everyone's, and decides the same way on every rank.
  Path choosePath(const NativeCall& call);
  Path decidePath(const NativeCall& call);
  // Whether this call's choice between staging and CMA follows the trials (path_trials.hpp):
  // the same answer on every rank.
  bool tunesPath(const NativeCall& call) const;
  // Where tunesPath: this call's step of the trials, taken once per call; else nullptr.
  const PathTrials::Step* trialStep(const NativeCall& call);
  // Whether this call is a trial class of its own for being in place (path_trials.hpp): a
  // broadcast whose root is in place, or an allreduce of at least kInPlaceClassBytes whose
  // first rank is in place. The same answer on every rank; before this call's exposure exchange.
  bool inPlaceClass(const NativeCall& call) const;
  // An allreduce in place reads and writes the same lines, which changes the faster path at
  // large sizes. 4 ranks in place, 4 alternating weft-perf runs against 5fdeb2b, medians: 263
  // against 336 us at 1 MiB, 1352 against 1505 at 4 MiB, 6989 against 7848 at 16 MiB (commit
  // 3bc65b0). On 2 ranks both classes chose CMA. From this size a call waits for the first
  // rank's exposure, small next to the call.
  static constexpr uint64_t kInPlaceClassBytes = 1 << 20;
  // Whether the trials say staged for this call without an exchange (a trial or hold call).
  static bool knownStaged(const PathTrials::Step* step) {
    return step && step->stage != PathTrials::Stage::Decide &&
           step->choice != PathTrials::Choice::Cma;
  }
  // Whether this call, staged, stores every piece into the slots through the cache: the
  // trials chose (or try) that. Otherwise each staged algorithm streams where it says.
  bool cachedSlotStores() const {
    return tunedCall_ && step_.choice == PathTrials::Choice::StagedCached;
  }
  // Exposures are double-buffered by call, so a rank a call ahead never overwrites what a
  // slower peer has yet to read.
  uint8_t* exposureLine(int q, uint32_t call) const;
  const Exposure& exposure(int q) const;
  // After choosePath: whether peer q's call is in NCCL's in-place form (as it published).
  bool inPlaceAt(int q) const;
  // Publishes this rank's exposure for the next exchange and, if `waitForPeers`, waits until
  // every peer has published theirs.
  void publishExposure(const Exposure& mine, bool waitForPeers = true);
  // Copies `bytes` at `offset` of peer q's send buffer to local `dst` (direct: memcpy through
  // the shared view; cma: process_vm_readv). q may be this rank.
  void copyFromPeer(Path path, int q, uint64_t offset, void* dst, uint64_t bytes);
  // Copies `bytes` from local `src` to `offset` of peer q's receive buffer with
  // process_vm_writev (cma path); q may be this rank.
  void copyToPeer(int q, uint64_t offset, const void* src, uint64_t bytes);
  // Direct path: the same into peer q's mapped receive buffer, past the cache where `streamed`
  // (and q is not this rank).
  void copyToMapped(int q, uint64_t offset, const void* src, uint64_t bytes, bool streamed);
  // process_vm_writev (write) or process_vm_readv of `bytes` between local memory and address
  // `remote` of peer q, resumed after partial copies; throws weftSystemError naming the peer.
  void cmaCopy(bool write, int q, uint8_t* local, uint64_t remote, uint64_t bytes);
  // In decidePath, every rank's buffers in weftMemAlloc memory: whether every region the
  // exposures name was in an earlier call where every rank mapped every region (so the call
  // needs no verdict), and, after such a verdict, remembering its regions. The same answers on
  // every rank.
  bool mappedBefore() const;
  void rememberMapped();
  // (owner's pid, region id)
  using MappedRegion = std::pair<uint32_t, uint64_t>;
  // Calls visit with every region the latest exposures name until it returns false; whether
  // none did.
  template <class Visit>
  bool everyRegion(const Visit& visit) const;
  // After choosePath: whether any rank's input and output overlap (by the addresses every rank
  // published), the same answer on every rank.
  bool anyRankInPlace(uint64_t bytes) const;
  // Direct path only: peer q's send buffer at `offset`, readable here, and its receive buffer,
  // writable here. q may be this rank.
  const uint8_t* peerInput(int q, uint64_t offset) const { return peerSend_[q] + offset; }
  uint8_t* peerOutput(int q, uint64_t offset) const { return peerRecv_[q] + offset; }
  // Direct path only: folds `len` elements of every rank's input at `offset` into `dst`, in one
  // pass per three inputs: rank `first`'s input first, then the ranks after it in turn (`dst`
  // may be one of the inputs, in place; no other overlap).
  void reduceInputs(const NativeCall& call, void* dst, int first, uint64_t offset, uint64_t len);
  // The order of a reduction does not depend on the path, so that the same inputs give the
  // same bits whichever path the trials, the measured CMA cost or the arrivals choose:
  // - allreduce up to kInlineBytes (inline, last arriver): rank order;
  // - larger allreduce: element e from the rank whose slice of the whole buffer holds it
  //   (blockRange(count, n, r)), then the ranks after it in turn. That is peer read's order:
  //   rank r reduces its slice reading its peers from the next one on, so no two ranks read the
  //   same peer at once (through CMA, every rank reading rank 0 first took 1.09x the time at 4
  //   MiB on 4 ranks). The one-shot and staged paths, which cut the buffer otherwise, reduce
  //   each range of elements (forEachSliceOwner) in the order of its owner;
  // - reduce-scatter: block b from rank b's input, then the ranks after it;
  // - reduce: rank order.
  // forEachSliceOwner calls fold(r, from, len) for the elements [at, at + len) of a buffer of
  // `count`, cut where the owner r of the slice changes.
  template <class Fold>
  void forEachSliceOwner(uint64_t count, uint64_t at, uint64_t len, const Fold& fold) const {
    for (const uint64_t end = at + len; at < end;) {
      const int r = static_cast<int>(blockOf(count, n(), at));
      const Range slice = blockRange(count, n(), r);
      const uint64_t stop = std::min(end, slice.offset + slice.count);
      fold(r, at, stop - at);
      at = stop;
    }
  }

  void allReduce(const NativeCall& call);
  void allReduceOneShot(const NativeCall& call);
  void allReduceLastArriver(const NativeCall& call);
  void allReduceInline(const NativeCall& call);
  void allReduceDirectOneShot(const NativeCall& call);
  void allReduceStaged(const NativeCall& call);
  void allReducePeerRead(const NativeCall& call, Path path);
  void reduceScatter(const NativeCall& call);
  void reduce(const NativeCall& call);
  void reduceDirect(const NativeCall& call);
  void broadcast(const NativeCall& call);
  void allGather(const NativeCall& call);
  void alltoAll(const NativeCall& call);
  void gather(const NativeCall& call);
  void scatter(const NativeCall& call);
  void movePeerReadOrStaged(const NativeCall& call);
  void moveStaged(const NativeCall& call);
  void movePeerRead(const NativeCall& call, Path path);
  // Direct, root in place: whether a broadcast's or scatter's root copies part of every
  // receiver's block (movement.cc); the same answer on every rank.
  bool rootSharesDirect() const;
  void alltoAllSwap(const NativeCall& call);

  ShmSegment& segment_;
  LocalGroup group_;
  ShmMode mode_;
  bool cmaWorks_ = true;
  double cmaCostRatio_ = 0;  // given, or agreed at setUp (cma_cost.hpp); 0: not known
  bool tune_ = true;         // WEFT_SHM_TUNE
  bool tuning_ = false;      // setUp: trials decide staging against CMA (tunesPath)
  PathTrials trials_;        // the same steps and decisions on every rank; times each rank's
  PathTrials::Step step_;    // the running call's, where stepTaken_ and tunedCall_
  bool stepTaken_ = false;
  bool tunedCall_ = false;
  bool timeTrial_ = false;  // the running call is a trial or probe that runs its path
  uint32_t calls_ = 0;      // native collectives run so far (callStartStamp)
  std::vector<uint64_t> callStarts_;  // the ranks' stamps, read at the end of a trial
  int cores_ = 0;
  bool oversubscribed_ = false;
  // Spreading ranks over the CPUs (cpu_spread.hpp): where each local rank last ran, and when
  // this rank may move next.
  static constexpr std::chrono::microseconds kMaxMoveBackoff{256 * 1000};
  bool spread_ = false;
  std::vector<int32_t> rankCpus_;
  std::chrono::steady_clock::time_point nextMove_{};
  std::chrono::microseconds moveBackoff_{1000};
  uint32_t lastArriverCalls_ = 0;        // calls of allReduceLastArriver so far
  uint32_t inlineCalls_ = 0;             // calls of allReduceInline so far
  uint32_t phase_ = 0;                   // this rank's last published phase
  uint32_t exposures_ = 0;               // calls that exchanged exposures
  uint32_t lastExposurePhase_ = 0;       // phase_ just after my latest exposure
  int parity_ = 0;                       // next staging slot
  std::array<uint32_t, 2> slotFree_{};   // phase after which every rank is done with a slot
  // Whether a peer may still read a slot of mine after I released it (false after a
  // last-arriver call that another rank reduced: it was done with my slot when it published).
  std::array<bool, 2> slotReadLater_{true, true};
  const WaitContext* wait_ = nullptr;    // of the call running
  std::vector<uint8_t> landing_;         // cma: where peers' data lands before it is reduced
  std::vector<uint8_t> accumulator_;     // partial sums: allReduceInline, allReduceLastArriver
  std::vector<const void*> sources_;     // what one reduceMany folds, in order
  PeerMappings mappings_;                // peers' weftMemAlloc regions, mapped here
  // The regions every rank has said it mapped, at most this many.
  static constexpr size_t kMappedRegionsKept = 256;
  std::set<MappedRegion> everyoneMapped_;
  std::vector<const uint8_t*> peerSend_;  // direct path: peers' buffers, here
  std::vector<uint8_t*> peerRecv_;        // (outputs writable: the direct allreduce writes them)
};

}  // namespace weft
