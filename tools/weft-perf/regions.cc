#include "regions.hpp"

#include <cstring>

namespace weft::perf {
namespace {

struct Builder {
  std::vector<Region>* out;
  void input(int buffer, uint64_t offset, uint64_t count, int rank, uint64_t index) {
    out->push_back({buffer, offset, count, Content::Input, rank, index});
  }
  void reduced(int buffer, uint64_t offset, uint64_t count, uint64_t index) {
    out->push_back({buffer, offset, count, Content::Reduced, 0, index});
  }
  void sentinel(int buffer, uint64_t offset, uint64_t count) {
    out->push_back({buffer, offset, count, Content::Sentinel, 0, 0});
  }
  // Block q (of `count` elements) of every rank q: that rank's input from `index(q)`.
  template <class F>
  void blocks(int buffer, int nranks, uint64_t count, F index) {
    for (int q = 0; q < nranks; ++q)
      input(buffer, static_cast<uint64_t>(q) * count, count, q, index(q));
  }
};

void planOutOfPlace(BufferPlan& p, Collective coll, const Layout& l, int r, int n, int root) {
  const uint64_t c = l.count;
  const uint64_t rc = static_cast<uint64_t>(r) * c;
  p.used[kSendBuffer] = p.used[kRecvBuffer] = true;
  p.extent[kSendBuffer] = l.sendCount;
  p.extent[kRecvBuffer] = l.recvCount;
  Builder before{&p.before}, after{&p.after};
  before.input(kSendBuffer, 0, l.sendCount, r, 0);
  before.sentinel(kRecvBuffer, 0, l.recvCount);
  after.input(kSendBuffer, 0, l.sendCount, r, 0);  // a send buffer is never written
  switch (coll) {
    case Collective::AllReduce: after.reduced(kRecvBuffer, 0, c, 0); break;
    case Collective::Broadcast: after.input(kRecvBuffer, 0, c, root, 0); break;
    case Collective::Reduce:
      if (r == root)
        after.reduced(kRecvBuffer, 0, c, 0);
      else
        after.sentinel(kRecvBuffer, 0, c);
      break;
    case Collective::AllGather: after.blocks(kRecvBuffer, n, c, [](int) { return 0; }); break;
    case Collective::ReduceScatter: after.reduced(kRecvBuffer, 0, c, rc); break;
    case Collective::AlltoAll: after.blocks(kRecvBuffer, n, c, [rc](int) { return rc; }); break;
    case Collective::Gather:
      if (r == root)
        after.blocks(kRecvBuffer, n, c, [](int) { return 0; });
      else
        after.sentinel(kRecvBuffer, 0, l.recvCount);
      break;
    case Collective::Scatter: after.input(kRecvBuffer, 0, c, root, rc); break;
    case Collective::SendRecv: after.input(kRecvBuffer, 0, c, (r - 1 + n) % n, 0); break;
  }
}

void planInPlace(BufferPlan& p, Collective coll, const Layout& l, int r, int n, int root) {
  const uint64_t c = l.count;
  const uint64_t rc = static_cast<uint64_t>(r) * c;
  const uint64_t all = l.inPlaceCount();
  const int b = kRecvBuffer;
  p.used[b] = true;
  p.extent[b] = all;
  Builder before{&p.before}, after{&p.after};
  // Blocks other than rank r's own, as sentinels (before) or as they must stay (after).
  const auto othersSentinel = [&](Builder& to) {
    to.sentinel(b, 0, rc);
    to.sentinel(b, rc + c, all - rc - c);
  };
  switch (coll) {
    case Collective::AllReduce:
      before.input(b, 0, c, r, 0);
      after.reduced(b, 0, c, 0);
      break;
    case Collective::Broadcast:
      before.input(b, 0, c, r, 0);
      after.input(b, 0, c, root, 0);
      break;
    case Collective::Reduce:
      before.input(b, 0, c, r, 0);
      if (r == root)
        after.reduced(b, 0, c, 0);
      else
        after.input(b, 0, c, r, 0);
      break;
    case Collective::AllGather:
      before.input(b, rc, c, r, 0);
      othersSentinel(before);
      after.blocks(b, n, c, [](int) { return 0; });
      break;
    case Collective::ReduceScatter:
      // The whole buffer is rank r's input; only block r becomes the result.
      before.input(b, 0, all, r, 0);
      after.input(b, 0, rc, r, 0);
      after.reduced(b, rc, c, rc);
      after.input(b, rc + c, all - rc - c, r, rc + c);
      break;
    case Collective::AlltoAll:
      before.input(b, 0, all, r, 0);
      after.blocks(b, n, c, [rc](int) { return rc; });
      break;
    case Collective::Gather:
      before.input(b, rc, c, r, 0);
      othersSentinel(before);
      if (r == root) {
        after.blocks(b, n, c, [](int) { return 0; });
      } else {
        after.input(b, rc, c, r, 0);
        othersSentinel(after);
      }
      break;
    case Collective::Scatter:
      if (r == root) {
        before.input(b, 0, all, r, 0);
        after.input(b, 0, all, r, 0);
      } else {
        before.sentinel(b, 0, all);
        after.input(b, rc, c, root, rc);
        othersSentinel(after);
      }
      break;
    case Collective::SendRecv:
      before.input(b, 0, c, r, 0);
      after.input(b, 0, c, (r - 1 + n) % n, 0);
      break;
  }
}

inline void store(uint8_t* p, size_t size, uint64_t bits) {
  switch (size) {
    case 1: *p = static_cast<uint8_t>(bits); return;
    case 2: {
      const auto v = static_cast<uint16_t>(bits);
      std::memcpy(p, &v, 2);
      return;
    }
    case 4: {
      const auto v = static_cast<uint32_t>(bits);
      std::memcpy(p, &v, 4);
      return;
    }
    default: std::memcpy(p, &bits, 8); return;
  }
}

inline uint64_t load(const uint8_t* p, size_t size) {
  switch (size) {
    case 1: return *p;
    case 2: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}

}  // namespace

BufferPlan planBuffers(Collective collective, const Layout& layout, bool inPlace, int rank,
                       int nranks, int root) {
  BufferPlan plan;
  if (inPlace)
    planInPlace(plan, collective, layout, rank, nranks, root);
  else
    planOutOfPlace(plan, collective, layout, rank, nranks, root);
  std::erase_if(plan.before, [](const Region& r) { return r.count == 0; });
  std::erase_if(plan.after, [](const Region& r) { return r.count == 0; });
  return plan;
}

BufferPointers placeBuffers(const Layout& layout, bool inPlace, int rank, uint8_t* send,
                            uint8_t* recv, size_t typeSize) {
  if (!inPlace) return {send, recv};
  const uint64_t r = static_cast<uint64_t>(rank);
  return {recv + r * layout.sendInPlaceOffset * typeSize,
          recv + r * layout.recvInPlaceOffset * typeSize};
}

void fillBuffers(const BufferPlan& plan, uint8_t* const buffers[2], const ValueSpec& spec) {
  const size_t ts = datatypeInfo(spec.type).size;
  for (int b = 0; b < 2; ++b) {
    if (!plan.used[b]) continue;
    uint8_t* front = buffers[b] - kGuardBytes;
    uint8_t* end = buffers[b] + plan.extent[b] * ts;
    for (size_t i = 0; i < kGuardBytes; ++i) {
      front[i] = guardByte(i);
      end[i] = guardByte(kGuardBytes + i);
    }
  }
  for (const Region& g : plan.before) {
    uint8_t* p = buffers[g.buffer] + g.offset * ts;
    for (uint64_t j = 0; j < g.count; ++j, p += ts) {
      switch (g.content) {
        case Content::Input: store(p, ts, inputBits(spec, g.sourceRank, g.sourceIndex + j)); break;
        case Content::Sentinel: store(p, ts, sentinelBits(ts, g.buffer, g.offset + j)); break;
        case Content::Reduced: break;  // never an input
      }
    }
  }
}

uint64_t countWrong(const BufferPlan& plan, const uint8_t* const buffers[2],
                    const ValueSpec& spec) {
  const size_t ts = datatypeInfo(spec.type).size;
  uint64_t wrong = 0;
  for (int b = 0; b < 2; ++b) {
    if (!plan.used[b]) continue;
    const uint8_t* front = buffers[b] - kGuardBytes;
    const uint8_t* end = buffers[b] + plan.extent[b] * ts;
    for (size_t i = 0; i < kGuardBytes; ++i) {
      wrong += front[i] != guardByte(i);
      wrong += end[i] != guardByte(kGuardBytes + i);
    }
  }
  for (const Region& g : plan.after) {
    const uint8_t* p = buffers[g.buffer] + g.offset * ts;
    for (uint64_t j = 0; j < g.count; ++j, p += ts) {
      const uint64_t got = load(p, ts);
      switch (g.content) {
        case Content::Input:
          wrong += got != inputBits(spec, g.sourceRank, g.sourceIndex + j);
          break;
        case Content::Sentinel: wrong += got != sentinelBits(ts, g.buffer, g.offset + j); break;
        case Content::Reduced: {
          const Expected e = expectedReduction(spec, g.sourceIndex + j);
          wrong += !resultMatches(spec, e, got);
          break;
        }
      }
    }
  }
  return wrong;
}

}  // namespace weft::perf
