// Reduce-scatter and reduce on shared memory.
// - reduce-scatter, staged: per piece, every rank stages that piece of every block but its own;
//   rank r reduces block r's piece from its input and every peer's slot into its output. Peer
//   read: rank r reduces block r straight from the peers' inputs.
// - reduce, staged: per chunk, every rank stages its input; rank r reduces slice r of the chunk
//   into its own slot; the root copies every slice out. Direct (every rank's buffers mapped):
//   rank r reduces slice r straight from every input into the root's output.
#include <algorithm>
#include <cstring>
#include <vector>

#include "algorithms/partition.hpp"
#include "algorithms/shm/shm_collectives.hpp"

namespace weft {

void ShmCollectives::reduceScatter(const NativeCall& call) {
  const uint32_t es = call.elemSize;
  const uint64_t count = call.count;
  auto* out = static_cast<uint8_t*>(call.recvbuff);
  const auto* in = static_cast<const uint8_t*>(call.sendbuff);
  const bool mayReadPeers = n() > 1 && count * es > kPeerReadFromBytes;
  const Path path = mayReadPeers ? choosePath(call) : Path::Staged;
  if (path != Path::Staged) {
    const uint64_t piece = std::max<uint64_t>(1, segment_.geometry().slotBytes / es);
    if (path == Path::Cma) landing_.resize(piece * es);
    for (uint64_t at = 0; at < count; at += piece) {
      const uint64_t len = std::min(piece, count - at);
      const uint64_t offset = (uint64_t(me()) * count + at) * es;  // my block, in every input
      uint8_t* acc = out + at * es;
      if (path == Path::Direct) {
        reduceInputs(call, acc, me(), offset, len);
        continue;
      }
      for (int k = 1; k < n(); ++k) {
        copyFromPeer(path, (me() + k) % n(), offset, landing_.data(), len * es);
        call.reduce(acc, k == 1 ? in + offset : acc, landing_.data(), len);
      }
    }
    arrive();
    waitAll(phase_);
    return;
  }
  const uint64_t piece = std::max<uint64_t>(1, segment_.geometry().slotBytes / es / n());
  for (uint64_t at = 0; at < count; at += piece) {
    const uint64_t len = std::min(piece, count - at);
    const int s = claimSlot();
    // Every block but my own, which only I read (straight from my input).
    for (int b = 0; b < n(); ++b)
      if (b != me())
        std::memcpy(slot(me(), s) + b * piece * es, in + (uint64_t(b) * count + at) * es, len * es);
    arrive();
    const uint32_t ready = phase_;
    // My block: my own input first, then every peer's staged piece (as the peer-read path
    // above; in place, my input is my output, which the kernels allow).
    uint8_t* dst = out + at * es;
    const uint8_t* own = in + (uint64_t(me()) * count + at) * es;
    const uint64_t mine = uint64_t(me()) * piece * es;
    sources_.assign(1, own);
    for (int k = 1; k < n(); ++k) {
      const int q = (me() + k) % n();
      waitPeer(q, ready);
      sources_.push_back(slot(q, s) + mine);
    }
    call.reduceMany(dst, sources_.data(), n(), len);  // one source: a copy
    if (uint64_t(n() - 1) * len * es <= kReclaimSlotBytes)
      for (int b = 0; b < n(); ++b)
        if (b != me()) reclaimSlot(s ^ 1, b * piece * es, len * es);
    arrive();
    releaseSlot(s);
  }
}

void ShmCollectives::reduce(const NativeCall& call) {
  const uint32_t es = call.elemSize;
  const uint64_t perChunk =
      std::max<uint64_t>(1, std::min(segment_.geometry().slotBytes, kStagePieceBytes) / es);
  auto* out = static_cast<uint8_t*>(call.recvbuff);
  const auto* in = static_cast<const uint8_t*>(call.sendbuff);
  const bool root = me() == call.root;
  if (n() == 1) {
    if (in != out) std::memmove(out, in, call.count * es);
    return;
  }
  // Above the size where ranks may read each other (as reduce-scatter), every rank publishes
  // its buffers; where every rank's are mapped, none is staged.
  if (call.count * es > kPeerReadFromBytes && choosePath(call) == Path::Direct)
    return reduceDirect(call);
  for (uint64_t at = 0; at < call.count; at += perChunk) {
    const uint64_t len = std::min(perChunk, call.count - at);
    const int s = claimSlot();
    std::memcpy(slot(me(), s), in + at * es, len * es);
    arrive();
    const uint32_t ready = phase_;
    const Range mine = blockRange(len, n(), me());
    uint8_t* acc = slot(me(), s) + mine.offset * es;
    sources_.clear();  // in rank order, as reduceDirect (mine too: the kernels allow that)
    for (int q = 0; q < n(); ++q) {
      if (q != me()) waitPeer(q, ready);
      sources_.push_back(slot(q, s) + mine.offset * es);
    }
    call.reduceMany(acc, sources_.data(), n(), mine.count);
    arrive();
    const uint32_t reduced = phase_;
    if (root) {
      for (int q = 0; q < n(); ++q) {
        const Range theirs = blockRange(len, n(), q);
        waitPeer(q, reduced);
        std::memcpy(out + (at + theirs.offset) * es, slot(q, s) + theirs.offset * es,
                    theirs.count * es);
      }
    }
    arrive();
    releaseSlot(s);
  }
}

// Rank r reduces slice r of every input into the root's output, a slot-sized piece at a time
// (the partial sums stay in cache), then waits until no peer reads its input or writes the
// root's output any more. In rank order, as the staged reduce: a root in place reduces into
// its own input (the kernels allow that, and no other overlap); only rank r touches slice r.
// weftMemAlloc buffers, 5 alternating weft-perf runs against the staged reduce (98e7d31),
// medians: 4 ranks on the 2 cores 0.85x the time at 32 KiB, 0.44 at 128 KiB, 0.43 at 512 KiB;
// 2 ranks 1.5-1.7 us at 64 KiB, 4.0-4.9 at 256 KiB, 18-20 at 1 MiB, where staging took 8.5-11,
// 23-25 and 60-62. Ordinary buffers, which now publish theirs above kPeerReadFromBytes:
// 0.84-1.06x on 2 ranks, 0.95-1.03x on 4.
void ShmCollectives::reduceDirect(const NativeCall& call) {
  const uint32_t es = call.elemSize;
  const Range mine = blockRange(call.count, n(), me());
  const uint64_t piece = std::max<uint64_t>(1, segment_.geometry().slotBytes / es);
  for (uint64_t at = 0; at < mine.count; at += piece) {
    const uint64_t len = std::min(piece, mine.count - at);
    const uint64_t offset = (mine.offset + at) * es;
    reduceInputs(call, peerOutput(call.root, offset), 0, offset, len);
  }
  arrive();
  waitAll(phase_);
}

void ShmCollectives::reduceInputs(const NativeCall& call, void* dst, int first, uint64_t offset,
                                  uint64_t len) {
  sources_.clear();
  for (int k = 0; k < n(); ++k) sources_.push_back(peerInput((first + k) % n(), offset));
  call.reduceMany(dst, sources_.data(), n(), len);
}

}  // namespace weft
