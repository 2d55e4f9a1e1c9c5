#include "tools/weft-perf/regions.hpp"

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

using namespace weft::perf;

namespace {

// One rank's memory: two allocations with room for the guards.
struct RankMemory {
  std::vector<uint8_t> alloc[2];
  uint8_t* buffers[2];
  RankMemory(uint64_t sendBytes, uint64_t recvBytes) {
    alloc[0].resize(sendBytes + 2 * kGuardBytes);
    alloc[1].resize(recvBytes + 2 * kGuardBytes);
    buffers[0] = alloc[0].data() + kGuardBytes;
    buffers[1] = alloc[1].data() + kGuardBytes;
  }
};

uint32_t load32(const uint8_t* p, uint64_t i) {
  uint32_t v;
  std::memcpy(&v, p + 4 * i, 4);
  return v;
}
void store32(uint8_t* p, uint64_t i, uint32_t v) {
  std::memcpy(p + 4 * i, &v, 4);
}

// NCCL's semantics of each collective on uint32 elements with a wrapping sum, written plainly:
// every rank's input is read (snapshotted) before any output is written, as a correct
// implementation behaves.
void simulate(Collective coll, const Layout& l, bool inPlace, int n, int root,
              std::vector<RankMemory>& mem) {
  std::vector<BufferPointers> p;
  for (int r = 0; r < n; ++r)
    p.push_back(placeBuffers(l, inPlace, r, mem[r].buffers[0], mem[r].buffers[1], 4));
  const uint64_t c = l.count;
  std::vector<std::vector<uint32_t>> in(n);
  for (int r = 0; r < n; ++r)
    for (uint64_t i = 0; i < l.sendCount; ++i)
      in[r].push_back(load32(static_cast<const uint8_t*>(p[r].send), i));
  const auto sum = [&](uint64_t i) {
    uint32_t s = 0;
    for (int q = 0; q < n; ++q) s += in[q][i];
    return s;
  };
  for (int r = 0; r < n; ++r) {
    auto* out = static_cast<uint8_t*>(p[r].recv);
    for (uint64_t i = 0; i < c; ++i) {
      switch (coll) {
        case Collective::AllReduce: store32(out, i, sum(i)); break;
        case Collective::Broadcast: store32(out, i, in[root][i]); break;
        case Collective::Reduce:
          if (r == root) store32(out, i, sum(i));
          break;
        case Collective::AllGather:
          for (int q = 0; q < n; ++q) store32(out, q * c + i, in[q][i]);
          break;
        case Collective::ReduceScatter: store32(out, i, sum(r * c + i)); break;
        case Collective::AlltoAll:
          for (int q = 0; q < n; ++q) store32(out, q * c + i, in[q][r * c + i]);
          break;
        case Collective::Gather:
          if (r == root)
            for (int q = 0; q < n; ++q) store32(out, q * c + i, in[q][i]);
          break;
        case Collective::Scatter: store32(out, i, in[root][r * c + i]); break;
        case Collective::SendRecv: store32(out, i, in[(r - 1 + n) % n][i]); break;
      }
    }
  }
}

}  // namespace

TEST_CASE("buffer plans accept NCCL's result for every collective, rank count and mode") {
  for (const Collective coll : kCollectives) {
    for (const int n : {1, 2, 3, 5}) {
      for (const bool inPlace : {false, true}) {
        for (const uint64_t bytes : {0, 4, 12, 100, 4000}) {
          const int root = n - 1;
          const Layout l = layoutFor(coll, bytes, 4, n);
          const ValueSpec spec{
              weftUint32, isReducing(coll) ? std::optional(ReduceOp::Sum) : std::nullopt, n, bytes};
          std::vector<RankMemory> mem;
          std::vector<BufferPlan> plans;
          for (int r = 0; r < n; ++r) {
            mem.emplace_back(l.sendCount * 4, l.inPlaceCount() * 4);
            plans.push_back(planBuffers(coll, l, inPlace, r, n, root));
            fillBuffers(plans[r], mem[r].buffers, spec);
          }
          simulate(coll, l, inPlace, n, root, mem);
          for (int r = 0; r < n; ++r) {
            INFO(collectiveName(coll) << " n " << n << (inPlace ? " in" : " out") << "-of-place "
                                      << bytes << " B, rank " << r);
            CHECK(countWrong(plans[r], mem[r].buffers, spec) == 0);
            // The plans describe every element of the extents they use, once.
            for (const auto* regions : {&plans[r].before, &plans[r].after}) {
              uint64_t covered[2] = {0, 0};
              for (const Region& g : *regions) covered[g.buffer] += g.count;
              CHECK(covered[0] == plans[r].extent[0]);
              CHECK(covered[1] == plans[r].extent[1]);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("a wrong element, a write outside the result or past the end is counted") {
  const int n = 3, root = 1;
  const uint64_t bytes = 3 * 4 * 10;
  for (const Collective coll : {Collective::Reduce, Collective::AllGather, Collective::Gather}) {
    const Layout l = layoutFor(coll, bytes, 4, n);
    const ValueSpec spec{
        weftUint32, coll == Collective::Reduce ? std::optional(ReduceOp::Sum) : std::nullopt, n, 5};
    const auto run = [&](auto corrupt) {
      std::vector<RankMemory> mem;
      std::vector<BufferPlan> plans;
      for (int r = 0; r < n; ++r) {
        mem.emplace_back(l.sendCount * 4, l.inPlaceCount() * 4);
        plans.push_back(planBuffers(coll, l, false, r, n, root));
        fillBuffers(plans[r], mem[r].buffers, spec);
      }
      simulate(coll, l, false, n, root, mem);
      corrupt(mem);
      uint64_t wrong = 0;
      for (int r = 0; r < n; ++r) wrong += countWrong(plans[r], mem[r].buffers, spec);
      return wrong;
    };
    INFO(collectiveName(coll));
    CHECK(run([](std::vector<RankMemory>&) {}) == 0);
    // A result element on the root.
    CHECK(run([&](std::vector<RankMemory>& m) { m[root].buffers[1][4 * 3] ^= 1; }) == 1);
    // A non-root's receive buffer (unused for reduce and gather) or a send buffer.
    CHECK(run([&](std::vector<RankMemory>& m) { m[0].buffers[1][0] ^= 0x80; }) == 1);
    CHECK(run([&](std::vector<RankMemory>& m) { m[2].buffers[0][5] ^= 0x10; }) == 1);
    // The guard bytes right after the receive extent and right before the send buffer.
    CHECK(run([&](std::vector<RankMemory>& m) {
            m[root].buffers[1][l.recvCount * 4] ^= 0xff;
            m[root].buffers[1][l.recvCount * 4 + kGuardBytes - 1] ^= 0xff;
          }) == 2);
    CHECK(run([&](std::vector<RankMemory>& m) { *(m[1].buffers[0] - 1) ^= 1; }) == 1);
  }
}

TEST_CASE("in-place pointers follow NCCL's in-place forms") {
  uint8_t send[64], recv[64];
  const Layout ag = layoutFor(Collective::AllGather, 48, 4, 3);  // 4 per rank
  const BufferPointers a = placeBuffers(ag, true, 2, send, recv, 4);
  CHECK(a.send == recv + 2 * 4 * 4);
  CHECK(a.recv == recv);
  const Layout rs = layoutFor(Collective::ReduceScatter, 48, 4, 3);
  const BufferPointers b = placeBuffers(rs, true, 1, send, recv, 4);
  CHECK(b.send == recv);
  CHECK(b.recv == recv + 1 * 4 * 4);
  const Layout ar = layoutFor(Collective::AllReduce, 48, 4, 3);
  const BufferPointers c = placeBuffers(ar, true, 1, send, recv, 4);
  CHECK(c.send == recv);
  CHECK(c.recv == recv);
  const BufferPointers d = placeBuffers(ar, false, 1, send, recv, 4);
  CHECK(d.send == send);
  CHECK(d.recv == recv);
  CHECK(hasMode(Collective::SendRecv, false));
  CHECK_FALSE(hasMode(Collective::SendRecv, true));
  CHECK(hasMode(Collective::AlltoAll, true));
}
