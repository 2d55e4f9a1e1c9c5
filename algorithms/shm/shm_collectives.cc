#include "algorithms/shm/shm_collectives.hpp"

#include <sched.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/shm/cma_cost.hpp"
#include "algorithms/shm/cpu_spread.hpp"
#include "algorithms/shm/stream_copy.hpp"
#include "lib/base/error.hpp"
#include "lib/base/log.hpp"

namespace weft {
namespace {

// kInPlace: the call is in NCCL's in-place form on this rank (NativeCall::inPlace).
constexpr uint32_t kSendShared = 1, kRecvShared = 2, kMapped = 4, kInPlace = 8;
const uint64_t kCmaProbe = 0x636d612d70726f62ull;  // what a peer's CMA probe reads

}  // namespace

ShmCollectives::ShmCollectives(ShmSegment& segment, const LocalGroup& group, ShmMode mode,
                               CoreAgreement cores, double cmaCost, bool spread, bool tune)
    : segment_(segment),
      group_(group),
      mode_(mode),
      cmaCostRatio_(cmaCost),
      tune_(tune),
      cores_(cores.cores),
      oversubscribed_(cores.oversubscribed),
      spread_(spread && group.size() > 1),
      rankCpus_(group.size(), -1) {}

bool ShmCollectives::serves(Collective c) {
  return c != Collective::Send && c != Collective::Recv;
}

void ShmCollectives::arrive() { segment_.control(me()).progress.publish(++phase_); }

void ShmCollectives::waitPeer(int q, uint32_t phase) const {
  if (q != me())
    waitFor(segment_.control(q).progress, phase, *wait_, group_.ranks[q], &segment_.control(q).cpu);
}

void ShmCollectives::waitAll(uint32_t phase) const {
  for (int q = 0; q < n(); ++q) waitPeer(q, phase);
}

int ShmCollectives::claimSlot() {
  const int parity = parity_;
  parity_ ^= 1;
  if (slotReadLater_[parity]) waitAll(slotFree_[parity]);
  return parity;
}

void ShmCollectives::reclaimSlot(int parity, uint64_t offset, uint64_t bytes) {
  prefetchForWrite(slot(me(), parity) + offset, bytes);
}

void ShmCollectives::releaseSlot(int parity, bool readLater) {
  slotFree_[parity] = phase_;
  slotReadLater_[parity] = readLater;
}

uint8_t* ShmCollectives::exposureLine(int q, uint32_t call) const {
  return segment_.control(q).exposure[call % 2];
}

void ShmCollectives::publishExposure(const Exposure& mine, bool waitForPeers) {
  // My line was last written two exchanges ago. A peer reads an exchange's lines until the end
  // of that call, and only its latest exchange's: once every peer has published the exchange in
  // between, none reads this line any more. (Ranks that wait at every exchange know that
  // already; one that went on without waiting may not.)
  waitAll(lastExposurePhase_);
  std::memcpy(exposureLine(me(), exposures_++), &mine, sizeof mine);
  arrive();
  lastExposurePhase_ = phase_;
  if (waitForPeers) waitAll(phase_);
}

const Exposure& ShmCollectives::exposure(int q) const {
  return *reinterpret_cast<const Exposure*>(exposureLine(q, exposures_ - 1));
}

bool ShmCollectives::inPlaceAt(int q) const {
  return (exposure(q).flags & kInPlace) != 0;
}

void ShmCollectives::setUp(const WaitContext& wait) {
  if (n() == 1 || group_.oneProcess || mode_ == ShmMode::Staged) return;
  wait_ = &wait;
  // Each rank reads a known word from the next rank's process, then all compare notes.
  Exposure mine;
  mine.send = reinterpret_cast<uint64_t>(&kCmaProbe);
  mine.pid = static_cast<uint32_t>(group_.pids[me()]);
  publishExposure(mine);
  const int next = (me() + 1) % n();
  uint64_t seen = 0;
  iovec local{&seen, sizeof seen};
  iovec far{reinterpret_cast<void*>(exposure(next).send), sizeof seen};
  const ssize_t got = process_vm_readv(static_cast<pid_t>(exposure(next).pid), &local, 1, &far, 1, 0);
  const bool ok = got == sizeof seen && seen == kCmaProbe;
  if (!ok)
    WEFT_INFO(kSubsysShm, "{}: CMA from rank {} refused ({}); copying through shared memory",
              wait.what(), group_.ranks[next], got < 0 ? std::strerror(errno) : "short read");
  mine.flags = ok ? 1 : 0;
  // Whether this rank would try both paths (path_trials.hpp): all must, or none does (ranks
  // started with different WEFT_SHM_TUNE or WEFT_SHM_CMA_COST would take different paths).
  const bool given = cmaCostRatio_ > 0;
  if (tune_ && !given) mine.flags |= 2;
  // Whether CMA is cheap here (cma_cost.hpp): given, or measured by every rank (once per
  // process; later communicators reuse it) and agreed as the median.
  auto measured = [] {
    static const double ratio = cmaCostRatio();
    return ratio;
  };
  const double ratio = !ok || mode_ != ShmMode::Auto ? 0 : given ? cmaCostRatio_ : measured();
  static_assert(sizeof ratio == sizeof mine.recv);
  std::memcpy(&mine.recv, &ratio, sizeof ratio);
  publishExposure(mine);
  std::vector<double> ratios;
  bool everyoneTunes = true;
  for (int q = 0; q < n(); ++q) {
    cmaWorks_ &= (exposure(q).flags & 1) != 0;
    everyoneTunes &= (exposure(q).flags & 2) != 0;
    double theirs;
    std::memcpy(&theirs, &exposure(q).recv, sizeof theirs);
    ratios.push_back(theirs);
  }
  if (cmaWorks_ && mode_ == ShmMode::Auto) {
    cmaCostRatio_ = agreedCmaCostRatio(std::move(ratios));
    // (Allreduce on more than 2 ranks only from kCmaAllReduceFromBytes.)
    auto someSize = [&](Collective c) {
      return cmaPreferred(c, n(), cmaCostRatio_, 0) ||
             cmaPreferred(c, n(), cmaCostRatio_, kCmaAllReduceFromBytes);
    };
    std::string viaCma;
    for (int c = 0; c < kNumCollectives; ++c)
      if (serves(Collective(c)) && someSize(Collective(c)))
        viaCma += std::string(viaCma.empty() ? "" : " ") + collectiveName(Collective(c));
    tuning_ = everyoneTunes;
    if (tuning_)
      WEFT_INFO(kSubsysShm,
                "{}: a CMA copy costs {:.2f} memcpys here (median of {} ranks); with ordinary "
                "buffers, the first calls of each collective and size time staging against "
                "CMA, and the faster is kept (WEFT_SHM_TUNE=0: go by the cost instead)",
                wait.what(), cmaCostRatio_, n());
    else
      WEFT_INFO(kSubsysShm,
                "{}: a CMA copy costs {:.2f} memcpys here (median of {} ranks{}); with ordinary "
                "buffers, these read peers through CMA (within cma_cost.hpp's sizes): {}",
                wait.what(), cmaCostRatio_, n(), given ? ", WEFT_SHM_CMA_COST" : "", viaCma);
  }
  wait_ = nullptr;
}

ShmCollectives::Path ShmCollectives::choosePath(const NativeCall& call) {
  const Path path = decidePath(call);
  static constexpr const char* kNames[] = {"staged", "direct", "cma"};
  WEFT_TRACE(kSubsysShm, "{}: {} path{}", wait_->what(), kNames[static_cast<int>(path)],
             path == Path::Staged && cachedSlotStores() ? " (cached stores)" : "");
  return path;
}

ShmCollectives::Path ShmCollectives::decidePath(const NativeCall& call) {
  if (mode_ == ShmMode::Staged) return Path::Staged;
  // Every rank says where its buffers are; then all decide alike from the same facts.
  // (A buffer the collective ignores on this rank is not in the call: nativeCall, in
  // lib/enqueue/launch.cc, leaves it out.)
  Exposure mine;
  mine.send = reinterpret_cast<uint64_t>(call.sendbuff);
  mine.recv = reinterpret_cast<uint64_t>(call.recvbuff);
  mine.pid = static_cast<uint32_t>(group_.pids[me()]);
  const SharedRegions& regions = SharedRegions::instance();
  // (A rank without a send or receive buffer in this call has nothing to share: it counts as
  // shared.)
  if (!call.sendbuff) mine.flags |= kSendShared;
  if (!call.recvbuff) mine.flags |= kRecvShared;
  if (call.inPlace) mine.flags |= kInPlace;
  if (auto r = call.sendbuff ? regions.find(call.sendbuff, 1) : std::nullopt) {
    mine.flags |= kSendShared;
    mine.sendRegion = *r;
  }
  if (auto r = call.recvbuff ? regions.find(call.recvbuff, 1) : std::nullopt) {
    mine.flags |= kRecvShared;
    mine.recvRegion = *r;
  }
  // Between processes, a rank whose own buffers are private already knows the answer where CMA
  // is out: staged (direct needs every rank's buffers mapped). It publishes its buffers for the
  // ranks that must still decide and goes on without waiting for them; the staged algorithm
  // waits for the peers where it needs them. (One barrier less per call: 2 ranks, 64 KiB, 1000
  // calls, 5 alternating runs, time without the exchange over with it: allgather 0.84,
  // broadcast 0.93, alltoall 0.82, reduce-scatter 0.89; 4 ranks, broadcast 0.77.)
  // Where the trials decide (path_trials.hpp), trial and hold calls know their path; in a
  // decide call every rank publishes its trial times with its exposure.
  const PathTrials::Step* step = trialStep(call);
  const bool tuned = step != nullptr;
  const bool deciding = tuned && step->stage == PathTrials::Stage::Decide;
  if (deciding) {
    const PathTrials::Medians m = trials_.medians();
    mine.trialStaged = m.staged;
    mine.trialCma = m.cma;
    mine.trialCached = m.cached;
  }
  const uint32_t both = kSendShared | kRecvShared;
  const bool stagedUnlessAllShared =
      mode_ == ShmMode::Auto &&
      (tuned ? knownStaged(step)
             : !(cmaWorks_ &&
                 cmaPreferred(call.collective, n(), cmaCostRatio_, call.count * call.elemSize)));
  const bool knowsStaged =
      !group_.oneProcess && (mine.flags & both) != both && stagedUnlessAllShared;
  publishExposure(mine, !knowsStaged);
  if (knowsStaged) return Path::Staged;
  if (deciding) {
    std::vector<PathTrials::Medians> medians;
    for (int q = 0; q < n(); ++q)
      medians.push_back({exposure(q).trialStaged, exposure(q).trialCma, exposure(q).trialCached});
    const PathTrials::Decision decision = trials_.decide(medians);
    step_.choice = decision.choice;
    trials_.follow(decision);
    if (me() == 0) WEFT_INFO(kSubsysShm, "{}: {}", wait_->what(), decision.line);
  }
  const bool cmaChosen = tuned && step_.choice == PathTrials::Choice::Cma;
  peerSend_.assign(n(), nullptr);
  peerRecv_.assign(n(), nullptr);
  if (group_.oneProcess) {
    if (mode_ == ShmMode::Cma) return Path::Cma;
    for (int q = 0; q < n(); ++q) {
      peerSend_[q] = reinterpret_cast<const uint8_t*>(exposure(q).send);
      peerRecv_[q] = reinterpret_cast<uint8_t*>(exposure(q).recv);
    }
    return Path::Direct;
  }
  bool allShared = mode_ == ShmMode::Auto;
  for (int q = 0; q < n() && allShared; ++q)
    allShared = (exposure(q).flags & (kSendShared | kRecvShared)) == (kSendShared | kRecvShared);
  if (allShared) {
    // Map every peer's regions, then agree: direct only if every rank could map everything.
    int unmapped = -1;  // the first peer whose regions this rank could not map
    for (int q = 0; q < n() && unmapped < 0; ++q) {
      if (q == me()) {
        peerSend_[q] = static_cast<const uint8_t*>(call.sendbuff);
        peerRecv_[q] = static_cast<uint8_t*>(call.recvbuff);
        continue;
      }
      const Exposure& e = exposure(q);
      const pid_t pid = static_cast<pid_t>(e.pid);
      bool mapped = true;
      if (e.send) mapped &= (peerSend_[q] = mappings_.map(pid, e.sendRegion)) != nullptr;
      if (e.recv) mapped &= (peerRecv_[q] = mappings_.map(pid, e.recvRegion)) != nullptr;
      if (!mapped) unmapped = q;
    }
    // Regions that every rank has mapped in an earlier call (every rank said so in that call's
    // verdict) need no verdict: every rank knows it from the same exposures. One exchange less
    // per call: weftMemAlloc buffers, allreduce, 2000 calls, 5 alternating runs on the 2-core
    // Intel Xeon build machine, time over the verdict's: 2 ranks 0.78 at 32 KiB, 0.84 at 64,
    // 0.89 at 128, 0.94 at 256; 4 ranks 0.76, 0.80, 0.87, 0.88; from 512 KiB within noise.
    if (mappedBefore()) {
      if (unmapped >= 0)
        fail(weftSystemError,
             "{}: could not map rank {}'s weftMemAlloc memory again (pidfd_getfd or mmap "
             "refused), which every rank had mapped before",
             wait_->what(), group_.ranks[unmapped]);
      WEFT_TRACE(kSubsysShm, "{}: every rank has mapped these regions before: no verdict",
                 wait_->what());
      timeTrial_ = false;  // (buffers every rank maps are read in place: no trial of a path)
      return Path::Direct;
    }
    Exposure verdict = mine;
    verdict.flags = (unmapped < 0 ? kMapped : 0) | (mine.flags & kInPlace);
    publishExposure(verdict);
    bool everyone = true;
    for (int q = 0; q < n(); ++q) everyone &= (exposure(q).flags & kMapped) != 0;
    if (everyone) {
      rememberMapped();
      timeTrial_ = false;
      return Path::Direct;
    }
  }
  // An allreduce stages through cache-sized slots at every size: the copies stay in cache and
  // need no system call, where CMA pins pages and copies by the kernel. perf/compare on the
  // 2-core build machine, staged against CMA (2 and 4 ranks, 5 alternating repetitions): 0.5x
  // the time at 32-64 KiB, 0.65-0.85x at 128 KiB-2 MiB, equal from 4 MiB.
  // Allgather stages too: perf/compare --coll all_gather (time over Open MPI's, CMA -> staged),
  // at 3993955 with WEFT_SHM_MODE=staged, 64 KiB-16 MiB, 7 alternating repetitions: 2 ranks
  // 0.83-1.13 -> 0.62-0.99, 4 ranks 0.66-0.92 -> 0.42-0.66 from 128 KiB; again with
  // WEFT_SHM_MODE=cma against the new default, 5 repetitions: 2 ranks 0.81-0.99 -> 0.62-0.90,
  // 4 ranks 0.85-0.97 -> 0.36-0.63.
  // Broadcast stages too. It did not settle in three such runs at 3993955 (staged over CMA's
  // time, up to 1-2 MiB: 2 ranks 0.73-0.94, 0.86-1.23, 1.10-1.14; 4 ranks 0.51-0.86,
  // 0.98-1.37, 0.68-0.87); at ed11cdf, on another machine of the same kind (an idle AMD EPYC,
  // 2 cores), perf/compare --coll broadcast -b 64K -e 64M, 5 alternating repetitions, staged over
  // CMA's time: 2 ranks 0.43-0.93, 4 ranks 0.44-0.84 (CMA's one process_vm_readv of 1 MiB took
  // 70 us, the staged pipeline 53 us).
  // Reduce-scatter, alltoall and gather stage too: on the build machine's AMD EPYC (2 cores),
  // at b5e3b1c, one process_vm_readv per slot-sized piece was the slow part. perf/compare
  // --weft-env WEFT_SHM_MODE=staged, 256 KiB-64 MiB, 3-5 alternating repetitions, staged over
  // CMA's time: reduce-scatter 0.49-0.59 on 2 ranks from 1 MiB (1.03 at 256 KiB) and
  // 0.46-0.54 on 4; alltoall, two runs, 0.57-0.72 on 2 ranks and 0.55-0.83 on 4; weft-perf
  // gather, 1-16 MiB, 3 alternating runs, medians: 0.38-0.53 on 2 ranks, 0.57-0.75 on 4. (At
  // 24cf15d, on another machine, staged alltoall had taken 1.2-1.4x CMA's time on 4 ranks
  // from 512 KiB.) Scatter keeps CMA: staged took 0.49-0.67x its time on 2 ranks but
  // 0.79-1.25x on 4, where the root alone copies every block into its slot.
  // Where a CMA copy is cheap (cma_cost.hpp), CMA wins instead for most collectives: on the
  // 2-core Intel Xeon build machine, 5 alternating weft-perf runs per size, medians, time with
  // WEFT_SHM_MODE=cma over staged's at 64 KiB-4 MiB: 2 ranks, broadcast 0.13-0.87, allgather
  // 0.47-0.73, alltoall 0.47-0.83 (from 256 KiB), gather 0.54-0.70, allreduce 0.48-0.95,
  // reduce-scatter 0.79-1.25; 4 ranks, allgather 0.86-1.06, alltoall 0.77-0.85, gather
  // 0.44-1.09, broadcast 1.61-1.83, allreduce 0.99-1.10, reduce-scatter 1.00-1.25. (Since
  // the CMA allreduce lands its first piece in the output, c9a2573, 3-4 ranks read through CMA
  // from 256 KiB: cma_cost.hpp.)
  if (!cmaWorks_) return Path::Staged;
  if (tuned) return cmaChosen ? Path::Cma : Path::Staged;
  if (mode_ == ShmMode::Auto &&
      !cmaPreferred(call.collective, n(), cmaCostRatio_, call.count * call.elemSize))
    return Path::Staged;
  return Path::Cma;
}

bool ShmCollectives::tunesPath(const NativeCall& call) const {
  if (!tuning_) return false;
  const uint64_t bytes = call.count * call.elemSize;
  switch (call.collective) {
    // (These ask for a path only above kPeerReadFromBytes per block: movePeerReadOrStaged.)
    case Collective::AllGather:
    case Collective::AlltoAll:
    case Collective::Gather:
    case Collective::Broadcast: return true;
    case Collective::AllReduce:
      // Where allReduce would otherwise read the peer through CMA or stage (2 ranks above
      // the inline size, each with a core; 3-4 ranks beyond one-shot): the sizes where either
      // has won on some machine (cma_cost.hpp).
      if (n() == 2) return !oversubscribed_ && bytes > kInlineBytes;
      return n() <= kCmaAllReduceMaxRanks && (oversubscribed_ || bytes * n() > kOneShotReadBytes);
    default: return false;
  }
}

const PathTrials::Step* ShmCollectives::trialStep(const NativeCall& call) {
  if (!stepTaken_) {
    stepTaken_ = true;
    tunedCall_ = tunesPath(call);
    if (tunedCall_) {
      step_ = trials_.step(call.collective, call.count * call.elemSize, inPlaceClass(call));
      timeTrial_ =
          step_.stage == PathTrials::Stage::Trial || step_.stage == PathTrials::Stage::Probe;
    }
  }
  return tunedCall_ ? &step_ : nullptr;
}

// The other ranks learn it from the exposure the root (the first rank for allreduce) publishes
// next (decidePath), at the next phase: every rank publishes its exposures at the same phases,
// and the root cannot publish again before this rank has. A broadcast's receivers would wait
// for the root next anyway (for its staged piece or its exposure), so this costs them no
// barrier; an allreduce's ranks wait for the first one's start. The root waits for nobody here.
bool ShmCollectives::inPlaceClass(const NativeCall& call) const {
  int root;
  if (call.collective == Collective::Broadcast)
    root = call.root;
  else if (call.collective == Collective::AllReduce &&
           call.count * call.elemSize >= kInPlaceClassBytes)
    root = 0;
  else
    return false;
  if (root == me()) return call.inPlace;
  waitPeer(root, phase_ + 1);
  const auto* next = reinterpret_cast<const Exposure*>(exposureLine(root, exposures_));
  return (next->flags & kInPlace) != 0;
}

bool ShmCollectives::anyRankInPlace(uint64_t bytes) const {
  for (int q = 0; q < n(); ++q) {
    const Exposure& e = exposure(q);
    if (e.send && e.recv && e.send < e.recv + bytes && e.recv < e.send + bytes) return true;
  }
  return false;
}

template <class Visit>
bool ShmCollectives::everyRegion(const Visit& visit) const {
  for (int q = 0; q < n(); ++q) {
    const Exposure& e = exposure(q);
    if (e.send && !visit(MappedRegion{e.pid, e.sendRegion.id})) return false;
    if (e.recv && !visit(MappedRegion{e.pid, e.recvRegion.id})) return false;
  }
  return true;
}

bool ShmCollectives::mappedBefore() const {
  return everyRegion([&](const MappedRegion& r) { return everyoneMapped_.count(r) != 0; });
}

void ShmCollectives::rememberMapped() {
  // Bounded; every rank clears it at the same call, so all keep the same set.
  if (everyoneMapped_.size() + 2 * static_cast<size_t>(n()) > kMappedRegionsKept)
    everyoneMapped_.clear();
  everyRegion([&](const MappedRegion& r) { return everyoneMapped_.insert(r), true; });
}

void ShmCollectives::copyFromPeer(Path path, int q, uint64_t offset, void* dst, uint64_t bytes) {
  if (bytes == 0) return;
  const uint64_t remote = exposure(q).send + offset;
  if (path == Path::Direct || q == me()) {
    // This rank's own buffers are its exposure's addresses.
    const uint8_t* src =
        path == Path::Direct ? peerInput(q, offset) : reinterpret_cast<const uint8_t*>(remote);
    if (src != dst) std::memmove(dst, src, bytes);
    return;
  }
  cmaCopy(false, q, static_cast<uint8_t*>(dst), remote, bytes);
}

void ShmCollectives::copyToPeer(int q, uint64_t offset, const void* src, uint64_t bytes) {
  if (bytes == 0) return;
  const Exposure& e = exposure(q);
  const uint64_t remote = e.recv + offset;
  if (q == me()) {
    if (reinterpret_cast<const void*>(remote) != src)
      std::memmove(reinterpret_cast<void*>(remote), src, bytes);
    return;
  }
  cmaCopy(true, q, const_cast<uint8_t*>(static_cast<const uint8_t*>(src)), remote, bytes);
}

void ShmCollectives::cmaCopy(bool write, int q, uint8_t* local, uint64_t remote, uint64_t bytes) {
  const pid_t pid = static_cast<pid_t>(exposure(q).pid);
  uint64_t done = 0;
  while (done < bytes) {
    iovec here{local + done, bytes - done};
    iovec far{reinterpret_cast<void*>(remote + done), bytes - done};
    const ssize_t moved = write ? process_vm_writev(pid, &here, 1, &far, 1, 0)
                                : process_vm_readv(pid, &here, 1, &far, 1, 0);
    if (moved <= 0) {
      const int err = moved < 0 ? errno : 0;
      if (err == EINTR) continue;
      // ESRCH: the process is gone, or exiting (its memory already released, so its pidfd may
      // not have reported it yet). Either way the peer died: a remote error, like a wait's.
      if (err == ESRCH)
        fail(weftRemoteError, "{}: rank {} (pid {}) exited ({} it: no such process)", wait_->what(),
             group_.ranks[q], pid, write ? "process_vm_writev to" : "process_vm_readv from");
      fail(weftSystemError, "{}: {} rank {} (pid {}): {}", wait_->what(),
           write ? "process_vm_writev to" : "process_vm_readv from", group_.ranks[q], pid,
           err ? std::strerror(err) : "short copy");
    }
    done += static_cast<uint64_t>(moved);
  }
}

void ShmCollectives::spreadOut(int32_t now) {
  for (int q = 0; q < n(); ++q)
    rankCpus_[q] = q == me() ? now : segment_.control(q).cpu.load(std::memory_order_relaxed);
  const int onMine = ranksOnMyCpu(rankCpus_, me(), now);
  if (!crowded(onMine, n(), cores_)) return;
  const auto t = std::chrono::steady_clock::now();
  if (t < nextMove_) return;
  nextMove_ = t + moveBackoff_;
  moveBackoff_ = std::min(moveBackoff_ * 2, kMaxMoveBackoff);
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) return;
  std::vector<int32_t> allowed;
  for (int32_t c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mask)) allowed.push_back(c);
  const int32_t to = leastCrowdedCpu(rankCpus_, now, onMine, allowed);
  if (to < 0) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(to, &one);
  // The kernel moves the thread before the first call returns; the second restores the mask.
  if (sched_setaffinity(0, sizeof one, &one) != 0) return;
  if (sched_setaffinity(0, sizeof mask, &mask) != 0) {
    // Left pinned to one CPU: say so, and move no more.
    WEFT_WARN(kSubsysShm, "{}: moved to CPU {} but could not restore the affinity mask: {}",
              wait_->what(), to, std::strerror(errno));
    spread_ = false;
  }
  const int32_t at = sched_getcpu();
  segment_.control(me()).cpu.store(at, std::memory_order_relaxed);
  WEFT_TRACE(kSubsysShm, "{}: {} local ranks last ran on CPU {}; moved to CPU {}", wait_->what(),
             onMine, now, at);
}

void ShmCollectives::run(const NativeCall& call, const WaitContext& wait) {
  wait_ = &wait;
  // Tell waiters where this rank runs (one store, and only when it moved).
  std::atomic<int32_t>& cpu = segment_.control(me()).cpu;
  const int32_t now = sched_getcpu();
  if (cpu.load(std::memory_order_relaxed) != now) cpu.store(now, std::memory_order_relaxed);
  if (spread_) spreadOut(now);
  const auto start = std::chrono::steady_clock::now();
  const uint64_t stamp = callStartStamp(
      ++calls_,
      std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count());
  segment_.control(me()).callStart.store(stamp, std::memory_order_relaxed);
  stepTaken_ = tunedCall_ = timeTrial_ = false;
  switch (call.collective) {
    case Collective::AllReduce: allReduce(call); break;
    case Collective::ReduceScatter: reduceScatter(call); break;
    case Collective::Reduce: reduce(call); break;
    case Collective::Broadcast: broadcast(call); break;
    case Collective::AllGather: allGather(call); break;
    case Collective::AlltoAll: alltoAll(call); break;
    case Collective::Gather: gather(call); break;
    case Collective::Scatter: scatter(call); break;
    default: fail(weftInternalError, "no shared-memory {}", collectiveName(call.collective));
  }
  if (timeTrial_) {
    // From the first rank's start (path_trials.hpp: callStartStamp). Every rank this one
    // waited for published its stamp before the data this rank read, so it is seen here.
    callStarts_.clear();
    for (int q = 0; q < n(); ++q)
      callStarts_.push_back(segment_.control(q).callStart.load(std::memory_order_relaxed));
    const double earlier = static_cast<double>(startedEarlierNs(callStarts_, stamp)) * 1e-9;
    trials_.record(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() +
                   earlier);
  }
  wait_ = nullptr;
}

}  // namespace weft
