// Broadcast, allgather, alltoall, gather and scatter on shared memory: every rank's output is
// made of blocks of count elements taken from the peers' inputs. Staged: the ranks that own the
// blocks copy them into their slots piece by piece (only the blocks another rank reads) and the
// others copy them out. Peer read
// (direct or CMA): every rank takes its blocks straight from the owners' buffers. An alltoall
// whose ranks are all in place with mapped buffers swaps blocks pairwise instead.
#include <algorithm>
#include <cstring>
#include <vector>

#include "algorithms/shm/shm_collectives.hpp"
#include "algorithms/shm/stream_copy.hpp"
#include "lib/base/error.hpp"
#include "lib/base/log.hpp"

namespace weft {
namespace {

// One block of rank `to`'s output: `count` elements of rank `from`'s input at `fromBlock`
// (in blocks of count), written at block `toBlock` of the output.
struct Transfer {
  int from;
  uint64_t fromBlock;
  uint64_t toBlock;
};

// The blocks rank r receives. Allgather and alltoall start with rank r's own block and go on
// from r + 1, so that the ranks do not all read rank 0 first: 4 ranks through CMA, 5
// alternating runs against 6f49e69, alltoall 0.84x the time at 1 MiB and 0.93 at 4 MiB (with
// the allgather's writes staggered the same way, allgather 0.83 and 0.94); staged and on 2
// ranks 0.95-1.07, within the noise.
std::vector<Transfer> transfersTo(Collective c, int r, int n, int root) {
  std::vector<Transfer> t;
  switch (c) {
    case Collective::Broadcast: t.push_back({root, 0, 0}); break;
    case Collective::AllGather:
      for (int k = 0; k < n; ++k) {
        const int q = (r + k) % n;
        t.push_back({q, 0, uint64_t(q)});
      }
      break;
    case Collective::AlltoAll:
      for (int k = 0; k < n; ++k) {
        const int q = (r + k) % n;
        t.push_back({q, uint64_t(r), uint64_t(q)});
      }
      break;
    case Collective::Gather:
      if (r == root)
        for (int q = 0; q < n; ++q) t.push_back({q, 0, uint64_t(q)});
      break;
    case Collective::Scatter: t.push_back({root, uint64_t(r), 0}); break;
    default: break;
  }
  return t;
}

// Whether another rank reads block `block` of `owner`'s input (the owner's own copy of a block
// goes straight from its input to its output, never through its slot).
bool readByPeer(Collective c, int owner, uint64_t block, int n, int root) {
  if (n == 1) return false;
  switch (c) {
    case Collective::AlltoAll:
    case Collective::Scatter: return block != uint64_t(owner);
    case Collective::Gather: return owner != root;
    default: return true;
  }
}

// The input blocks rank q stages for others, in the order they sit in its slot: the blocks
// another rank reads (an alltoall's or scatter's own block and a gather root's stay out, so
// the others get larger pieces).
std::vector<uint64_t> blocksOf(Collective c, int q, int n, int root) {
  std::vector<uint64_t> b;
  auto stage = [&](uint64_t block) {
    if (readByPeer(c, q, block, n, root)) b.push_back(block);
  };
  switch (c) {
    case Collective::Broadcast:
      if (q == root) stage(0);
      break;
    case Collective::AllGather:
    case Collective::Gather: stage(0); break;
    case Collective::AlltoAll:
      for (int k = 0; k < n; ++k) stage(uint64_t(k));
      break;
    case Collective::Scatter:
      if (q == root)
        for (int k = 0; k < n; ++k) stage(uint64_t(k));
      break;
    default: break;
  }
  return b;
}

// Broadcast and scatter through CMA (and direct, root in place: rootSharesDirect): how many
// elements at the end of every receiver's block the root writes into it (process_vm_writev, or
// a copy into the receiver's mapped output) while the receiver reads the rest, so that both
// copy at once instead of the root waiting. In place, 1/n of the block, which shares the copies
// evenly; out of place, 1/(n + 1), the root's copy of its own block counting as one more
// receiver's. CMA forced, 2 ranks out of place, 5 alternating runs at cafd94f with a temporary
// switch, medians at 1, 4 and 16 MiB: 47.5, 193 and 1427 us writing 1/3 (47.9, 185 and 1300
// writing 1/4, 51.8-53.3, 211-213 and 1518-1606 writing 0.4) against 61.3, 237 and 1973 not
// writing; 4 ranks, 3 runs, 1/5: 0.79x, 1.07x and 0.82x the time.
uint64_t rootWrites(Collective c, int n, uint64_t count, bool rootInPlace) {
  if (n < 2 || (c != Collective::Broadcast && c != Collective::Scatter)) return 0;
  return count / uint64_t(rootInPlace ? n : n + 1);
}

}  // namespace

void ShmCollectives::broadcast(const NativeCall& call) { movePeerReadOrStaged(call); }
void ShmCollectives::allGather(const NativeCall& call) { movePeerReadOrStaged(call); }
void ShmCollectives::gather(const NativeCall& call) { movePeerReadOrStaged(call); }
void ShmCollectives::scatter(const NativeCall& call) { movePeerReadOrStaged(call); }
void ShmCollectives::alltoAll(const NativeCall& call) { movePeerReadOrStaged(call); }

void ShmCollectives::movePeerReadOrStaged(const NativeCall& call) {
  const uint64_t blockBytes = call.count * call.elemSize;
  // Two ranks read each other from exactly kPeerReadFromBytes on (2 processes, cheap CMA, 16
  // KiB blocks, 3-5 alternating launches, time through CMA over staged: broadcast 0.81,
  // allgather 0.74, alltoall 0.69, gather 0.69, scatter 0.72; 8 KiB: 1.21-1.37); more ranks
  // only above it (4 ranks, 16 KiB blocks: allgather 1.31, alltoall 1.13).
  const bool readsPeers =
      n() == 2 ? blockBytes >= kPeerReadFromBytes : n() > 2 && blockBytes > kPeerReadFromBytes;
  Path path = readsPeers ? choosePath(call) : Path::Staged;
  // In-place alltoall cannot read peers in place: a rank would overwrite what a peer reads.
  // Where every rank is in place and maps every buffer, the ranks swap blocks instead
  // (alltoAllSwap). Otherwise they decide from every rank's published buffers, so that one
  // rank in place sends all of them through the slots (a rank that alone staged would wait for
  // peers that read instead).
  if (path != Path::Staged && call.collective == Collective::AlltoAll &&
      anyRankInPlace(blockBytes * n())) {
    bool everyRank = path == Path::Direct;
    for (int q = 0; q < n() && everyRank; ++q) everyRank = inPlaceAt(q);
    if (everyRank) return alltoAllSwap(call);
    path = Path::Staged;
    timeTrial_ = false;  // (not the path the trial was for)
  }
  if (path == Path::Staged)
    moveStaged(call);
  else
    movePeerRead(call, path);
}

// Direct, a broadcast's or scatter's root in place has nothing of its own to copy: it writes the
// last 1/n of every receiver's block into the receiver's mapped output while the receivers read
// the rest (rootWrites). Out of place its copy of its own block already matches a receiver's,
// so it writes none. weft-perf -R 1 on the 2-core Intel Xeon build machine, 5 alternating runs
// against the receivers reading everything, in place, 1, 4, 16 and 64 MiB: broadcast 2 ranks
// 12.5 us against 42, 170 against 440, 780 against 1600, 3.2 ms against 8.5; 4 ranks 75-92 us
// against 110-130 at 1 MiB and 11 ms against 13 at 64 MiB; scatter 2 ranks 0.27-0.7x the time,
// 4 ranks 0.6-0.75x from 4 MiB. Out of place it took 1.2-1.6x as long on 2 ranks. Where ranks
// share the cores unevenly (3 or 5 on 2), the root's part lands on a core that already has a
// receiver: 1.1-1.35x as long (3 ranks, both collectives; broadcast on 5); 6 ranks 0.8-0.95.
bool ShmCollectives::rootSharesDirect() const {
  return !oversubscribed_ || (cores_ > 0 && n() % cores_ == 0);
}

void ShmCollectives::copyToMapped(int q, uint64_t offset, const void* src, uint64_t bytes,
                                  bool streamed) {
  uint8_t* dst = peerOutput(q, offset);
  if (dst == src) return;  // a gather's root in place: its block is there already
  if (streamed && q != me())
    streamCopy(dst, src, bytes);
  else
    std::memcpy(dst, src, bytes);
}

// Direct: every rank reads its blocks from the owners' buffers, except in a gather, where every
// rank writes its block into the root's output: the root alone read all of them, in turn
// (weft-perf -R 1 on the 2-core Intel Xeon build machine, 5 alternating runs, 1, 4, 16 and 64
// MiB: 2 ranks out of place 14, 158, 780 us and 3.4 ms against 38, 400, 1450 and 8.8 ms; in
// place, 3 ranks 0.3-0.5x the time from 4 MiB and 4 ranks 0.55-0.7x; in place on 2 ranks,
// one block either way, the same). CMA, allgather and gather: every
// rank writes its blocks into the receivers' buffers (process_vm_writev) straight from its own
// cache, and the copies are spread over the senders; perf/compare, 2 and 4 ranks, 5 alternating
// repetitions on a loaded machine: allgather 0.7-0.8x the time of reading at 1-4 MiB. CMA,
// broadcast, scatter and alltoall: every rank reads its blocks (process_vm_readv), so that a
// root does not copy every block itself (broadcast: pushing took 1.5-2x as long). The root also
// writes the end of every receiver's block (rootWrites): in place, the last 1/n. On the Intel Xeon
// build machine (dcf2d9b) that took 1.1x as long as the receivers reading everything, at 1-64
// MiB on 2 ranks; on the AMD EPYC one (4f6b09b and a temporary switch, CMA forced, in place,
// 3 alternating runs) it took 0.39-0.47x as long at 1 MiB on 2 ranks, 0.46-0.54 at 4 MiB and
// 0.30-0.38 at 16 MiB (24-26 against 50-62 us at 1 MiB), and 0.81-1.08 on 4 ranks at 1-16 MiB.
void ShmCollectives::movePeerRead(const NativeCall& call, Path path) {
  const uint64_t blockBytes = call.count * call.elemSize;
  const bool gather = call.collective == Collective::Gather;
  if ((path == Path::Cma && (gather || call.collective == Collective::AllGather)) ||
      (path == Path::Direct && gather)) {
    // My one input block goes to block me() of every rank's output (gather: the root's only).
    // Direct, as streamed as the root's own reads of it were.
    const bool streamed =
        path == Path::Direct && streamOutput(blockBytes * n(), n(), false, oversubscribed_);
    for (int k = 0; k < n(); ++k) {
      const int q = (me() + k) % n();
      if (gather && q != call.root) continue;
      if (path == Path::Cma)
        copyToPeer(q, uint64_t(me()) * blockBytes, call.sendbuff, blockBytes);
      else
        copyToMapped(q, uint64_t(me()) * blockBytes, call.sendbuff, blockBytes, streamed);
    }
  } else {
    auto* out = static_cast<uint8_t*>(call.recvbuff);
    const std::vector<Transfer> transfers = transfersTo(call.collective, me(), n(), call.root);
    // Peers' blocks read in place stream into a large output, as staged ones do. weft-perf -R 1,
    // 5-9 alternating runs against c991d1c, medians, time over cached stores': allgather 0.64 (2
    // ranks, 16 MiB), 0.56 (4, 4 MiB); alltoall 0.82, 0.61; broadcast 1.0, 0.59; 2 ranks at 4
    // MiB and 8 ranks at 1-8 MiB 0.95-1.12 (within this machine's noise).
    const bool streamed = path == Path::Direct &&
                          streamOutput(blockBytes * transfers.size(), n(), false, oversubscribed_);
    const bool rootShares =
        path == Path::Cma || (path == Path::Direct && inPlaceAt(call.root) && rootSharesDirect());
    const uint64_t tail =
        rootShares
            ? rootWrites(call.collective, n(), call.count, inPlaceAt(call.root)) * call.elemSize
            : 0;
    const uint64_t head = blockBytes - tail;
    if (tail > 0 && me() == call.root)
      for (int k = 1; k < n(); ++k) {
        const int q = (me() + k) % n();
        const Transfer t = transfersTo(call.collective, q, n(), call.root).front();
        const uint64_t to = t.toBlock * blockBytes + head;
        const auto* from =
            static_cast<const uint8_t*>(call.sendbuff) + t.fromBlock * blockBytes + head;
        if (path == Path::Cma)
          copyToPeer(q, to, from, tail);
        else
          copyToMapped(q, to, from, tail, streamed);
      }
    for (const Transfer& t : transfers) {
      uint8_t* dst = out + t.toBlock * blockBytes;
      const uint64_t reads = t.from == call.root && t.from != me() ? head : blockBytes;
      if (streamed && t.from != me())
        streamCopy(dst, peerInput(t.from, t.fromBlock * blockBytes), reads);
      else
        copyFromPeer(path, t.from, t.fromBlock * blockBytes, dst, reads);
    }
  }
  arrive();
  waitAll(phase_);  // owners keep their inputs, receivers their outputs, until all are done
}

// Alltoall in place where every rank's buffer is mapped: block q of rank r's buffer and block
// r of rank q's trade places. The two ranks of each pair share the swap: the lower takes the
// first half of the block, the higher the rest, so each rank reads and writes n - 1 half blocks
// of its own and as many of its peers', about what the out-of-place direct path moves, and no
// byte goes through a slot. No two swaps touch the same bytes, so the ranks need no step
// between them; the exposures every rank has read say that every buffer is ready, and nobody
// leaves until every swap is done.
void ShmCollectives::alltoAllSwap(const NativeCall& call) {
  const uint32_t es = call.elemSize;
  const uint64_t blockBytes = call.count * es;
  const uint64_t lowHalf = call.count / 2 * es;
  auto* mine = static_cast<uint8_t*>(call.recvbuff);
  WEFT_TRACE(kSubsysShm, "{}: every rank in place: blocks swapped pairwise", wait_->what());
  // Through a buffer small enough to stay in the L1 cache, piece by piece.
  landing_.resize(std::min<uint64_t>(kSwapPieceBytes, blockBytes));
  uint8_t* held = landing_.data();
  for (int k = 1; k < n(); ++k) {
    const int q = (me() + k) % n();
    const uint64_t from = me() < q ? 0 : lowHalf;
    const uint64_t to = me() < q ? lowHalf : blockBytes;
    uint8_t* a = mine + uint64_t(q) * blockBytes;
    uint8_t* b = peerOutput(q, uint64_t(me()) * blockBytes);
    for (uint64_t at = from; at < to; at += kSwapPieceBytes) {
      const uint64_t len = std::min(kSwapPieceBytes, to - at);
      std::memcpy(held, a + at, len);
      std::memcpy(a + at, b + at, len);
      std::memcpy(b + at, held, len);
    }
  }
  arrive();
  waitAll(phase_);
}

void ShmCollectives::moveStaged(const NativeCall& call) {
  const uint32_t es = call.elemSize;
  const std::vector<uint64_t> mine = blocksOf(call.collective, me(), n(), call.root);
  const std::vector<Transfer> needs = transfersTo(call.collective, me(), n(), call.root);
  // Pieces of each block small enough that a rank's staged blocks fit its slot, and at most
  // kStagePieceBytes.
  size_t mostBlocks = 1;
  for (int q = 0; q < n(); ++q)
    mostBlocks = std::max(mostBlocks, blocksOf(call.collective, q, n(), call.root).size());
  const uint64_t piece = std::max<uint64_t>(
      1, std::min(segment_.geometry().slotBytes / mostBlocks, kStagePieceBytes) / es);
  // Where each needed block sits in its owner's slot.
  std::vector<size_t> slotIndex;
  for (const Transfer& t : needs) {
    const std::vector<uint64_t> theirs = blocksOf(call.collective, t.from, n(), call.root);
    slotIndex.push_back(static_cast<size_t>(
        std::find(theirs.begin(), theirs.end(), t.fromBlock) - theirs.begin()));
  }
  const auto* in = static_cast<const uint8_t*>(call.sendbuff);
  auto* out = static_cast<uint8_t*>(call.recvbuff);
  const uint64_t count = call.count;
  // A large output is written past the cache, as allreduce's (streamOutput). perf/compare
  // --weft-env at 3196b91 (a temporary switch) on the AMD EPYC build machine, 16 and 64 MiB, 5
  // alternating repetitions, time over cached stores': alltoall 0.78-0.85 (2 and 4 ranks),
  // allgather 0.85-0.90 (2) and 0.71-0.73 (4), broadcast 0.73-0.85. (At ed11cdf, on another
  // machine, broadcast had been within noise: 0.9 and 1.05.)
  // In place, an alltoall's output blocks are the input blocks it has just staged. The root of
  // a 2-rank gather in place copies only the peer's block, each piece as soon as it is staged;
  // where the peer stages with cached stores, the root's own cached stores push the slot lines
  // it has read out of its cache, so that the peer's next stores need not take them back (out
  // of place, its copy of its own block does that). 5 runs of each way, in place: 104-122 us
  // at 4 MiB against 210-293 streaming its output, 529-702 against 782-956 at 16 MiB. (With
  // more ranks the root copies more than each peer stages and is the one waited for: 4 ranks
  // took 1.55x the time at 16 MiB this way.)
  const bool gatherRootInPlace = call.collective == Collective::Gather && call.inPlace && n() == 2;
  const bool streamed =
      !(gatherRootInPlace && cachedSlotStores()) &&
      streamOutput(count * es * needs.size(), n(),
                   call.inPlace && call.collective == Collective::AlltoAll, oversubscribed_);
  // Large pieces go into the slot with streaming stores where every rank has a core: the
  // slot's lines were last read by the peers, and cached stores wait for each to be given up.
  // 2 ranks, staged, 3-5 alternating weft-perf runs at 256 KiB-16 MiB, medians, time over
  // memcpy's: alltoall 0.81-0.98, allgather 0.90-0.99, broadcast 0.80-1.04, scatter
  // 0.81-0.99, gather 0.86-0.95 (to 1 MiB). On 4 ranks sharing the 2 cores they did not help:
  // allgather 1.01-1.08, broadcast 0.82-1.03; nor small pieces (4-rank broadcast, 8-128 KiB:
  // 1.10-1.13). Where the trials found cached stores faster (path_trials.hpp), none stream.
  const bool streamedIn =
      !cachedSlotStores() && !oversubscribed_ && piece * es >= kStreamStageBytes;
  for (uint64_t at = 0; at < count; at += piece) {
    const uint64_t len = std::min(piece, count - at);
    const int s = claimSlot();
    for (size_t i = 0; i < mine.size(); ++i) {
      uint8_t* to = slot(me(), s) + i * piece * es;
      const uint8_t* from = in + (mine[i] * count + at) * es;
      if (streamedIn)
        streamCopy(to, from, len * es);
      else
        std::memcpy(to, from, len * es);
    }
    arrive();
    const uint32_t ready = phase_;
    int waited = 0;  // peers
    for (size_t k = 0; k < needs.size(); ++k) {
      const Transfer& t = needs[k];
      uint8_t* dst = out + (t.toBlock * count + at) * es;
      if (t.from == me()) {
        const uint8_t* src = in + (t.fromBlock * count + at) * es;
        if (src != dst) std::memmove(dst, src, len * es);
        continue;
      }
      waitPeer(t.from, ready);
      ++waited;
      const uint8_t* src = slot(t.from, s) + slotIndex[k] * piece * es;
      if (streamed)
        streamCopy(dst, src, len * es);
      else
        std::memcpy(dst, src, len * es);
    }
    if (waited == n() - 1 && mine.size() * len * es <= kReclaimSlotBytes)
      for (size_t i = 0; i < mine.size(); ++i) reclaimSlot(s ^ 1, i * piece * es, len * es);
    arrive();
    releaseSlot(s);
  }
}

}  // namespace weft
