// One collective case as a rank sees it: inputs from tests/support/reference.hpp laid out in
// NCCL's buffer conventions (in place or not), and a check of the rank's output against the
// reference. Shared by the in-process loopback tests and the multi-process program, which
// differ only in how ranks run.
#pragma once

#include <fmt/format.h>
#include <malloc.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <iterator>
#include <new>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"
#include "include/weft.h"
#include "support/reference.hpp"

namespace weft::testing {

struct CaseShape {
  Collective collective = Collective::AllReduce;
  int nranks = 1;
  int root = 0;
  uint64_t count = 0;
  weftDataType_t type = weftFloat32;
  int op = weftSum;  // weftRedOp_t value or kPreMulSum
};

// One datatype of each element size (1, 2, 4 and 8 bytes): what schedules depend on, for sweeps
// that cannot afford every datatype.
inline constexpr weftDataType_t kOnePerSize[] = {weftFloat8e4m3, weftFloat16, weftFloat32,
                                                 weftFloat64};
inline bool onePerSize(weftDataType_t type) {
  return std::find(std::begin(kOnePerSize), std::end(kOnePerSize), type) != std::end(kOnePerSize);
}

inline bool reduces(Collective c) {
  return c == Collective::AllReduce || c == Collective::Reduce || c == Collective::ReduceScatter;
}

// Whether some rank's buffer holds n blocks of `count` elements (reduce-scatter's input,
// allgather's output, both of alltoall's, the root's in gather and scatter): a case then moves
// and checks n^2 x count elements, which the sweeps bound on many ranks.
inline bool holdsBlocks(Collective c) {
  return c == Collective::ReduceScatter || c == Collective::AllGather ||
         c == Collective::AlltoAll || c == Collective::Gather || c == Collective::Scatter;
}

// Elements of rank r's send and receive buffers.
inline uint64_t sendCount(const CaseShape& s, int r) {
  const uint64_t c = s.count, n = s.nranks;
  switch (s.collective) {
    case Collective::ReduceScatter:
    case Collective::AlltoAll: return n * c;
    case Collective::Broadcast: return r == s.root ? c : 0;
    case Collective::Scatter: return r == s.root ? n * c : 0;
    default: return c;
  }
}
inline uint64_t recvCount(const CaseShape& s, int r) {
  const uint64_t c = s.count, n = s.nranks;
  switch (s.collective) {
    case Collective::AllGather:
    case Collective::AlltoAll: return n * c;
    case Collective::Reduce: return r == s.root ? c : 0;
    case Collective::Gather: return r == s.root ? n * c : 0;
    default: return c;
  }
}

// Inputs and reduced results of one (collective, ranks, datatype, operator) for counts up to
// maxCount: they do not depend on the count, so they are computed once and reused.
struct CaseInputs {
  std::vector<std::vector<uint8_t>> encoded;  // per rank, in send-buffer order
  std::vector<double> reduced;                // expected result of element e (reducing only)
  std::vector<uint8_t> reducedBits;           // the same, encoded

  CaseInputs(CaseShape shape, uint64_t maxCount) {
    const int n = shape.nranks;
    const size_t es = datatypeSize(shape.type);
    shape.count = maxCount;
    uint64_t maxSend = 0;
    for (int r = 0; r < n; ++r) {
      shape.root = r;  // a root has the largest send buffer where it matters
      maxSend = std::max(maxSend, sendCount(shape, r));
    }
    encoded.assign(n, std::vector<uint8_t>(maxSend * es));
    if (reduces(shape.collective)) {
      reduced.resize(shape.collective == Collective::ReduceScatter ? uint64_t(n) * maxCount
                                                                   : maxCount);
      reducedBits.resize(reduced.size() * es);
    }
    const int valueOp = reduces(shape.collective) ? shape.op : weftSum;
    for (uint64_t e = 0; e < maxSend; ++e) {  // one pass: every rank's input and the reduction
      Accumulator acc(shape.type, shape.op, n);
      for (int r = 0; r < n; ++r) {
        const double v = inputValue(shape.type, valueOp, r, n, e);
        encode(shape.type, v, encoded[r].data() + e * es);
        acc.add(v);
      }
      if (e < reduced.size()) {
        reduced[e] = acc.result();
        encode(shape.type, reduced[e], reducedBits.data() + e * es);
      }
    }
  }
};

// The sweeps allocate and free inputs and references of up to a few MiB for every case. glibc
// maps each such block afresh and unmaps it when freed, so every case paid its page faults
// again: half the time of a native sweep (weft-test-native allreduce: 5.2 s, 2.0 s without).
// Programs that include this keep freed memory for the next case: blocks up to 32 MiB (glibc's
// largest threshold) come from the heap, and the heap is not trimmed. (Sanitizers' allocators
// ignore this.)
inline const bool kKeepFreedMemory = [] {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
  return true;
}();

// Memory for test buffers: a plain heap vector, or memory from weftMemAlloc (which peers map:
// the zero-copy path), grown as needed and reused from case to case (fresh allocations would
// make page faults the main cost of the tests).
class TestMemory {
 public:
  explicit TestMemory(bool shared = false) : shared_(shared) {}
  TestMemory(const TestMemory&) = delete;
  TestMemory& operator=(const TestMemory&) = delete;
  ~TestMemory() {
    if (shared_ && base_) weftMemFree(base_);
  }
  uint8_t* get(size_t bytes) {
    if (!shared_) {
      heap_.resize(std::max<size_t>(bytes, 1));
      return heap_.data();
    }
    if (bytes > capacity_) {
      if (base_) weftMemFree(base_);
      capacity_ = std::max<size_t>(bytes, 2 * capacity_);
      void* p = nullptr;
      if (weftMemAlloc(&p, capacity_) != weftSuccess) throw std::bad_alloc();
      base_ = static_cast<uint8_t*>(p);
    }
    return base_;
  }

 private:
  bool shared_;
  std::vector<uint8_t> heap_;
  uint8_t* base_ = nullptr;
  size_t capacity_ = 0;
};

// One rank's buffers for a case. `shift` places them one element past an aligned address
// (buffers at arbitrary element offsets, as users' are).
class RankBuffers {
 public:
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;

  explicit RankBuffers(bool sharedMemory = false) : a_(sharedMemory), b_(sharedMemory) {}

  void prepare(const CaseShape& s, int r, bool inPlace, const CaseInputs& inputs,
               bool shift = false) {
    const size_t es = datatypeSize(s.type);
    const size_t skew = shift ? es : 0;
    const uint64_t sendN = sendCount(s, r), recvN = recvCount(s, r);
    const uint8_t* input = inputs.encoded[r].data();
    if (inPlace && sendN > 0 && recvN > 0) {
      // NCCL's in-place forms: the smaller buffer sits inside the larger one.
      uint64_t offset = 0;
      if (s.collective == Collective::AllGather || s.collective == Collective::ReduceScatter)
        offset = uint64_t(r) * s.count;
      if (s.collective == Collective::Gather || s.collective == Collective::Scatter)
        offset = uint64_t(s.root) * s.count;
      const size_t bytes = std::max(sendN, recvN) * es;
      uint8_t* base = a_.get(bytes + skew) + skew;
      std::memset(base, 0xEE, bytes);
      uint8_t* sendAt = sendN >= recvN ? base : base + offset * es;
      std::memcpy(sendAt, input, sendN * es);
      sendbuff = sendAt;
      recvbuff = sendN >= recvN ? base + offset * es : base;
    } else {
      uint8_t* send = a_.get(sendN * es + skew) + skew;
      uint8_t* recv = b_.get(recvN * es + skew) + skew;
      // (Memory from weftMemAlloc is null for 0 bytes, which memcpy may not take.)
      if (sendN) std::memcpy(send, input, sendN * es);
      if (recvN) std::memset(recv, 0xEE, recvN * es);
      sendbuff = sendN ? send : nullptr;
      recvbuff = recvN ? recv : nullptr;
    }
  }

  // Wrong elements in this rank's output; the first is described in `first`.
  uint64_t check(const CaseShape& s, int r, const CaseInputs& inputs, std::string& first) const {
    const size_t es = datatypeSize(s.type);
    const uint64_t c = s.count;
    uint64_t wrong = 0;
    auto out = [&](uint64_t e) { return static_cast<const uint8_t*>(recvbuff) + e * es; };
    // Reduced results: bitwise against the encoded reference, else element by element by value
    // (which also accepts -0 for +0, and the average's tolerance).
    auto checkReduced = [&](uint64_t from) {
      if (c == 0 || std::memcmp(out(0), inputs.reducedBits.data() + from * es, c * es) == 0)
        return;
      for (uint64_t e = 0; e < c; ++e) {
        const double got = decode(s.type, out(e)), want = inputs.reduced[from + e];
        if (matches(s.type, s.op, got, want)) continue;
        if (wrong++ == 0)
          first = fmt::format("rank {} element {}: got {} want {}", r, e, got, want);
      }
    };
    // Moved data must arrive bit for bit: output block `block` is rank q's input from `from`.
    auto checkBlock = [&](uint64_t block, int q, uint64_t from) {
      const uint8_t* want = inputs.encoded[q].data() + from * es;
      if (c == 0 || std::memcmp(out(block * c), want, c * es) == 0) return;
      for (uint64_t e = 0; e < c; ++e)
        if (std::memcmp(out(block * c + e), want + e * es, es) != 0 && wrong++ == 0)
          first = fmt::format("rank {} element {}: not rank {}'s element {}", r, block * c + e,
                              q, from + e);
    };
    switch (s.collective) {
      case Collective::AllReduce: checkReduced(0); break;
      case Collective::Reduce:
        if (r == s.root) checkReduced(0);
        break;
      case Collective::ReduceScatter: checkReduced(uint64_t(r) * c); break;
      case Collective::AllGather:
        for (int q = 0; q < s.nranks; ++q) checkBlock(q, q, 0);
        break;
      case Collective::Broadcast: checkBlock(0, s.root, 0); break;
      case Collective::AlltoAll:
        for (int q = 0; q < s.nranks; ++q) checkBlock(q, q, uint64_t(r) * c);
        break;
      case Collective::Gather:
        if (r == s.root)
          for (int q = 0; q < s.nranks; ++q) checkBlock(q, q, 0);
        break;
      case Collective::Scatter: checkBlock(0, s.root, uint64_t(r) * c); break;
      default: break;
    }
    return wrong;
  }

 private:
  TestMemory a_, b_;
};

inline std::string describeCase(const CaseShape& s, bool inPlace) {
  return fmt::format("{} n={} root={} count={} {} {} {}", collectiveName(s.collective), s.nranks,
                     s.root, s.count, datatypeName(s.type), opName(s.op),
                     inPlace ? "in-place" : "out-of-place");
}

}  // namespace weft::testing
