// Allreduce on shared memory.
// - inline (small, every rank with a core): every rank publishes its input with its flag, in
//   the flag's line and the lines after it, and reduces every rank's in rank order;
// - last arriver (small, ranks sharing cores): the last rank to stage its input reduces for all;
// - one-shot (up to kOneShotReadBytes read per rank): every rank stages its input, then reduces
//   all staged copies, each element in the order peer read takes (forEachSliceOwner), so every
//   rank and every path computes the same bits;
// - staged (large, buffers peers cannot read): per cache-sized chunk, every rank stages its
//   input; rank r reduces slice r of the chunk from every slot into its output and copies it
//   into its own slot (the owner of a slice is the only one to compute it, so all ranks end
//   with the same bits); then every rank copies the other slices into its output;
// - direct one-shot (ranks read each other's buffers in place, every rank has a core, no rank
//   in place, up to kDirectOneShotReadBytes read per rank): every rank reduces every rank's
//   input straight into its output, in the same order;
// - peer read (large, direct or CMA): rank r reduces slice r of the whole buffer straight from
//   the peers' inputs into its output and, piece by piece while it is in cache, writes it into
//   every peer's output: every rank reads N and writes N bytes, in one phase. Through CMA, the
//   first peer's piece lands in the output itself (out of place), so the output's lines are in
//   cache before the reduction writes them.
#include <algorithm>
#include <cstring>
#include <vector>

#include "algorithms/partition.hpp"
#include "algorithms/shm/cma_cost.hpp"
#include "algorithms/shm/shm_collectives.hpp"
#include "algorithms/shm/stream_copy.hpp"

namespace weft {
namespace {

// Output of a large collective (streamOutput): streamed past the cache (it is not read again
// soon). Small outputs stay cached for the caller.
void copyOut(void* dst, const void* src, size_t bytes, bool streamed) {
  if (streamed)
    streamCopy(dst, src, bytes);
  else
    std::memcpy(dst, src, bytes);
}

}  // namespace

void ShmCollectives::allReduce(const NativeCall& call) {
  const uint64_t bytes = call.count * call.elemSize;
  if (n() == 1) return allReduceOneShot(call);  // a copy, out of place
  if (oversubscribed_ && bytes <= kLastArriverBytes) return allReduceLastArriver(call);
  if (bytes <= kInlineBytes) return allReduceInline(call);
  // Where the trials choose the path (tunesPath), choosePath says which.
  const bool tuned = trialStep(call) != nullptr;
  const bool cmaPair = !tuned && cmaPairAllReduce(bytes);
  const bool oneShotFits = !cmaPair && !oversubscribed_ && bytes * n() <= kOneShotReadBytes;
  // Every rank publishes its buffers, small calls too: a rank whose own buffers are private
  // knows it stages and goes on without waiting (decidePath), while ranks whose buffers every
  // rank maps read them in place. 2 ranks, weftMemAlloc buffers, 5 alternating weft-perf runs
  // of 500 calls, against the one-shot through the slots that all took before: 20 KiB 1.1-1.4
  // us against 3.7-4.8 (in place 0.8-0.9 against 3.6-4.3), 40 KiB 1.8-2.0 against 7.2-8.0;
  // ordinary buffers, which now publish theirs, 3.8-4.8 against 3.8-4.4 at 20 KiB.
  const Path path = choosePath(call);
  if (path == Path::Direct && !oversubscribed_ && bytes * n() <= kDirectOneShotReadBytes &&
      !anyRankInPlace(bytes))
    return allReduceDirectOneShot(call);
  // (In place, ranks that read each other's buffers read their slices: allReducePeerRead.)
  if (oneShotFits && path != Path::Direct && !(tuned && path == Path::Cma))
    return allReduceOneShot(call);
  if (path == Path::Staged) return allReduceStaged(call);
  allReducePeerRead(call, path);
}

// Two processes with a core each, where a CMA copy is cheap: above kInlineBytes (allReduce
// asks only there; the inline allreduce ties with this at 16 KiB: 0.99) each reads half of the
// other's input and writes half of its output (allReducePeerRead), where one-shot stages the
// whole input and reads the whole of the peer's. Intel Xeon build machine, 5 alternating runs
// of 5000 calls, not bound, peer read over one-shot: 1.19x the time at 8 KiB, 0.90 at 12 KiB,
// 0.73 at 16 KiB, 0.55-0.66 at 24-32 KiB, 0.61 at 64 KiB, 0.99 at 128 KiB.
bool ShmCollectives::cmaPairAllReduce(uint64_t bytes) const {
  if (n() != 2 || oversubscribed_ || group_.oneProcess) return false;
  if (mode_ == ShmMode::Staged || !cmaWorks_) return false;
  return mode_ == ShmMode::Cma || cmaPreferred(Collective::AllReduce, 2, cmaCostRatio_, bytes);
}

void ShmCollectives::allReduceOneShot(const NativeCall& call) {
  const uint32_t es = call.elemSize;
  const uint64_t perChunk = segment_.geometry().slotBytes / es;
  auto* out = static_cast<uint8_t*>(call.recvbuff);
  const auto* in = static_cast<const uint8_t*>(call.sendbuff);
  if (n() == 1) {
    if (in != out) std::memmove(out, in, call.count * es);
    return;
  }
  for (uint64_t at = 0; at < call.count; at += perChunk) {
    const uint64_t len = std::min(perChunk, call.count - at);
    const int s = claimSlot();
    std::memcpy(slot(me(), s), in + at * es, len * es);
    arrive();
    waitAll(phase_);
    forEachSliceOwner(call.count, at, len, [&](int r, uint64_t from, uint64_t part) {
      sources_.clear();
      for (int k = 0; k < n(); ++k) sources_.push_back(slot((r + k) % n(), s) + (from - at) * es);
      call.reduceMany(out + from * es, sources_.data(), n(), part);
    });
    arrive();
    releaseSlot(s);
  }
}

// Every rank reads every input in place, so no rank may write its output while a peer might
// still read the same memory as an input (anyRankInPlace). The output is reduced a slot-sized
// piece at a time, so the partial sums stay in cache while each further input is added.
void ShmCollectives::allReduceDirectOneShot(const NativeCall& call) {
  const uint32_t es = call.elemSize;
  const uint64_t piece = std::max<uint64_t>(1, segment_.geometry().slotBytes / es);
  auto* out = static_cast<uint8_t*>(call.recvbuff);
  for (uint64_t at = 0; at < call.count; at += piece) {
    forEachSliceOwner(call.count, at, std::min(piece, call.count - at),
                      [&](int r, uint64_t from, uint64_t part) {
                        reduceInputs(call, out + from * es, r, from * es, part);
                      });
  }
  // Nobody may leave (and let its caller reuse its input) while a peer still reads it.
  arrive();
  waitAll(phase_);
}

// Small payloads: each rank writes its input into its own inline block (the flag's line and
// the lines after it) and bumps the flag's sequence number; readers wait on each peer's flag
// and find the data in the same line and the next ones. Blocks alternate by call. A rank
// rewrites a block two calls later, once every peer has published the call in between, which
// it does only after reading the block: one publish per call, no other flag, no slot.
// 2 processes, 5 alternating launches of 20000 calls, medians, time over that of the one-shot
// allreduce (with its slot reclaimed, 80cff21): 0.79-0.82 at 64 B, 0.84-0.85 at 128 B (before
// the block took the data lines back below), 0.71 at 512 B, 0.69 at 2 KiB, 0.75-0.77 at 4-12
// KiB; 16 KiB, against the CMA read of two processes: 0.99.
// Inline payloads up to this size are stored without publish()'s fence (below).
constexpr uint64_t kLazyWakeBytes = 512;

void ShmCollectives::allReduceInline(const NativeCall& call) {
  const uint64_t bytes = call.count * call.elemSize;
  const uint32_t calls = ++inlineCalls_;
  const int parity = calls & 1;
  if (calls > 2)
    for (int q = 0; q < n(); ++q)
      if (q != me())
        waitFor(segment_.control(q).inlined[parity ^ 1].flag, calls - 1, *wait_, group_.ranks[q],
                &segment_.control(q).cpu);
  InlineBlock& mine = segment_.control(me()).inlined[parity];
  std::memcpy(mine.data(), call.sendbuff, bytes);
  // Up to kLazyWakeBytes, stored now and sleepers woken once the peers' flags are in (or
  // before waiting long for them): publish()'s fence would stall on this line, which the peers
  // poll. 2 processes, 5-12 alternating runs, medians, time over publish()'s: 0.91-1.03 at 8 B
  // (four series), 0.87-0.94 at 64-512 B; at 1-4 KiB the series went both ways (0.93-1.1).
  const bool lazy = bytes <= kLazyWakeBytes;
  if (lazy)
    mine.flag.store(calls);
  else
    mine.flag.publish(calls);
  for (int q = 0; q < n(); ++q)
    if (q != me())
      waitFor(segment_.control(q).inlined[parity].flag, calls, *wait_, group_.ranks[q],
              &segment_.control(q).cpu, lazy ? &mine.flag : nullptr);
  if (lazy) mine.flag.wakeSleepers();
  // Every peer has started this call, so none reads my other block any more: its data lines
  // are taken back now (as reclaimSlot does), not when the next call's copy would stall on
  // them. Not its flag's line, which a peer that is ahead may already be polling: with it, 4
  // KiB took 1.3x as long.
  if (bytes > sizeof(SharedFlag::payload))
    prefetchForWrite(segment_.control(me()).inlined[parity ^ 1].more,
                     bytes - sizeof(SharedFlag::payload));
  // Every rank reduces in rank order, so every rank computes the same bits. My own part comes
  // from my input.
  auto part = [&](int q) -> const void* {
    return q == me() ? call.sendbuff : segment_.control(q).inlined[parity].data();
  };
  if (n() == 2) {  // in place too: the kernels allow the output to be an input
    call.reduce(call.recvbuff, part(0), part(1), call.count);
    return;
  }
  // One source at a time, as allReduceLastArriver (whose folding took longer).
  accumulator_.resize(bytes);
  uint8_t* acc = accumulator_.data();
  call.reduce(acc, part(0), part(1), call.count);
  for (int q = 2; q < n(); ++q) call.reduce(acc, acc, part(q), call.count);
  std::memcpy(call.recvbuff, acc, bytes);
}

// Ranks that share cores: every rank stages its input and counts itself in; the last to arrive
// reduces every slot, in rank order, into its own and says where the result is; the others,
// asleep on one futex word, wake once and copy it. Each rank runs once per call, and the
// reduction is done once instead of by every rank.
void ShmCollectives::allReduceLastArriver(const NativeCall& call) {
  const uint32_t es = call.elemSize;
  const int s = claimSlot();
  std::memcpy(slot(me(), s), call.sendbuff, call.count * es);
  const uint32_t calls = ++lastArriverCalls_;
  SharedFlag& result = segment_.hostFlag(1 + (calls & 1));  // double-buffered, as the slots
  // acq_rel: my staged input is visible to whoever arrives last, and theirs to me.
  const uint32_t arrived =
      segment_.hostFlag(0).value.fetch_add(1, std::memory_order_acq_rel) + 1;
  int owner;
  if (arrived == calls * static_cast<uint32_t>(n())) {
    // In rank order, as the other allreduces here, so the same inputs give the same bits
    // whichever rank arrives last (starting from its own input, as this did, the bits of a
    // float sum changed from call to call). The partial sums go into my slot from the step
    // that reads my input there (the first, for ranks 0 and 1), into a private buffer before.
    // One source at a time, not reduceMany: these few KiB come from other cores' caches, and
    // the 1000-call 4 KiB loop took 1.04x (8 ranks) and 1.03x (4) the time folding them.
    uint8_t* sum = slot(me(), s);
    if (me() > 1) accumulator_.resize(call.count * es);
    auto partial = [&](int q) { return q >= me() ? sum : accumulator_.data(); };
    call.reduce(partial(1), slot(0, s), slot(1, s), call.count);
    for (int q = 2; q < n(); ++q) call.reduce(partial(q), partial(q - 1), slot(q, s), call.count);
    owner = me();
    std::memcpy(result.payload, &owner, sizeof owner);
    result.publish(calls);
  } else {
    waitFor(result, calls, *wait_, -1);
    std::memcpy(&owner, result.payload, sizeof owner);
  }
  std::memcpy(call.recvbuff, slot(owner, s), call.count * es);
  arrive();
  // Only the owner's slot is read after the result is out (by every rank, copying it): the
  // owner read mine before it published, so unless I am the owner, the next claim of this
  // slot need not wait for every rank to have copied.
  releaseSlot(s, owner == me());
  // Every rank has arrived, so every rank has copied the previous call's result: nobody reads
  // my other slot any more, and its lines are taken back now rather than when the next call's
  // staging and the arrival's locked add wait for them. The 1000-call 4 KiB loop, 7
  // alternating weft-perf runs, medians: 4 ranks 5.04 us against 5.23, 8 ranks 10.62 against
  // 11.42.
  reclaimSlot(s ^ 1, 0, call.count * es);
}

void ShmCollectives::allReduceStaged(const NativeCall& call) {
  const uint32_t es = call.elemSize;
  const uint64_t perChunk = segment_.geometry().slotBytes / es;
  auto* out = static_cast<uint8_t*>(call.recvbuff);
  const auto* in = static_cast<const uint8_t*>(call.sendbuff);
  // In place, the slices copied out are the ones just staged from the same lines.
  const bool streamed = streamOutput(call.count * es, n(), call.inPlace, oversubscribed_);
  const bool cachedStores = cachedSlotStores();
  for (uint64_t at = 0; at < call.count; at += perChunk) {
    const uint64_t len = std::min(perChunk, call.count - at);
    const int s = claimSlot();
    // Stage only what the peers need: every slice but my own.
    uint8_t* staging = slot(me(), s);
    for (int q = 0; q < n(); ++q) {
      if (q == me()) continue;
      const Range r = blockRange(len, n(), q);
      std::memcpy(staging + r.offset * es, in + (at + r.offset) * es, r.count * es);
    }
    arrive();
    const uint32_t ready = phase_;
    // My slice: my input and every peer's staged copy, each range in its slice owner's order
    // (forEachSliceOwner), reduced straight into my output (in place too: the kernels allow the
    // output to be one of the inputs), then copied into my own
    // slot, which the peers read next. Reducing into the slot took twice as long: its lines
    // were last read by the peers, and every store of the reduction waited for them to be
    // given up. The copy streams past the cache, unless the trials found cached stores faster
    // (path_trials.hpp): the peers then read the slice from this core's cache rather than from
    // memory.
    const Range mine = blockRange(len, n(), me());
    uint8_t* result = out + (at + mine.offset) * es;
    for (int k = 1; k < n(); ++k) waitPeer((me() + k) % n(), ready);
    forEachSliceOwner(
        call.count, at + mine.offset, mine.count, [&](int r, uint64_t from, uint64_t part) {
          sources_.clear();
          for (int k = 0; k < n(); ++k) {
            const int q = (r + k) % n();
            sources_.push_back(q == me() ? in + from * es : slot(q, s) + (from - at) * es);
          }
          call.reduceMany(out + from * es, sources_.data(), n(), part);
        });
    if (cachedStores)
      std::memcpy(staging + mine.offset * es, result, mine.count * es);
    else
      streamCopy(staging + mine.offset * es, result, mine.count * es);
    arrive();
    const uint32_t reduced = phase_;
    for (int k = 1; k < n(); ++k) {
      const int q = (me() + k) % n();
      const Range theirs = blockRange(len, n(), q);
      waitPeer(q, reduced);
      copyOut(out + (at + theirs.offset) * es, slot(q, s) + theirs.offset * es, theirs.count * es,
              streamed);
    }
    arrive();
    releaseSlot(s);
  }
}

void ShmCollectives::allReducePeerRead(const NativeCall& call, Path path) {
  const uint32_t es = call.elemSize;
  auto* out = static_cast<uint8_t*>(call.recvbuff);
  const Range mine = blockRange(call.count, n(), me());
  // Reduce my slice piece by piece, so the partial result stays in cache while every peer's
  // contribution is added. In place, my own input is the output: start from it.
  const uint64_t piece = std::max<uint64_t>(1, peerReadPieceBytes(path) / es);
  std::vector<uint8_t>& landing = landing_;
  if (path == Path::Cma) landing.resize(piece * es);
  for (uint64_t at = 0; at < mine.count; at += piece) {
    const uint64_t len = std::min(piece, mine.count - at);
    const uint64_t offset = (mine.offset + at) * es;
    uint8_t* acc = out + offset;
    const auto* own = static_cast<const uint8_t*>(call.sendbuff) + offset;
    if (path == Path::Direct) {
      // Every input is here at once (in place, acc is own, the first source).
      reduceInputs(call, acc, me(), offset, len);
    } else {
      for (int k = 1; k < n(); ++k) {
        // Out of place, the first peer's piece lands in my output: the kernel's copy brings
        // those lines into cache, and the reduction then writes them where they are (into
        // the landing buffer, the output's lines would be read for ownership from memory).
        const bool first = k == 1;
        uint8_t* to = first && acc != own ? acc : landing.data();
        copyFromPeer(path, (me() + k) % n(), offset, to, len * es);
        call.reduce(acc, first ? own : acc, to, len);
      }
    }
    // The reduced piece, still in cache, goes straight into every peer's output. Only I
    // read the peers' inputs at my slice, so in place too nothing there is still needed.
    for (int k = 1; k < n(); ++k) {
      const int q = (me() + k) % n();
      if (path == Path::Cma)
        copyToPeer(q, offset, acc, len * es);
      else
        copyOut(peerOutput(q, offset), acc, len * es,  // a peer in place: output just read
                streamOutput(call.count * es, n(), inPlaceAt(q), oversubscribed_));
    }
  }
  // Nobody may leave (and let its caller reuse its buffers) while a peer still reads or
  // writes them.
  arrive();
  waitAll(phase_);
}

}  // namespace weft
