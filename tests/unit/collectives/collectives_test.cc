// Every collective through the real launch path over loopback communicators: every rank count
// 1..17, counts {0, 1, 2, 7, 1023, 65537} (with 4 KiB pipeline chunks, so the large counts span
// many), every datatype x operator, in place and out of place, against tests/support/reference.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "algorithms/reduce/datatype.hpp"
#include "support/reference.hpp"
#include "unit/collectives/loopback_world.hpp"

using namespace weft;
using namespace weft::testing;

namespace {

const uint64_t kCounts[] = {0, 1, 2, 7, 1023, 65537};
constexpr uint64_t kMaxCount = 65537;
constexpr uint64_t kChunkBytes = 4096;

// Inputs and reduced results of one (ranks, datatype, operator): they do not depend on the
// count, so they are computed once for the largest and reused for every count and layout.
struct CaseData {
  std::vector<std::vector<uint8_t>> inputs;  // per rank, encoded, in send-buffer order
  std::vector<double> reduced;               // expected result of element e (reducing only)
  std::vector<uint8_t> reducedBits;          // the same, encoded (exact results only)

  CaseData(Collective coll, int n, weftDataType_t type, int op) {
    const size_t es = datatypeSize(type);
    Operation probe;
    probe.collective = coll;
    probe.count = kMaxCount;
    uint64_t maxSend = 0;
    for (int r = 0; r < n; ++r) {
      probe.root = r;  // the root has the largest send buffer where it matters
      maxSend = std::max(maxSend, sendElements(probe, r, n));
    }
    inputs.resize(n);
    for (int r = 0; r < n; ++r) inputs[r].resize(maxSend * es);
    if (isReducing(coll)) {
      reduced.resize(coll == Collective::ReduceScatter ? uint64_t(n) * kMaxCount : kMaxCount);
      reducedBits.resize(reduced.size() * es);
    }
    // One pass: every rank's input of element e, and their reduction.
    const int valueOp = isReducing(coll) ? op : weftSum;
    for (uint64_t e = 0; e < maxSend; ++e) {
      Accumulator acc(type, op, n);
      for (int r = 0; r < n; ++r) {
        const double v = inputValue(type, valueOp, r, n, e);
        encode(type, v, inputs[r].data() + e * es);
        acc.add(v);
      }
      if (e < reduced.size()) {
        reduced[e] = acc.result();
        encode(type, reduced[e], reducedBits.data() + e * es);
      }
    }
  }
};

// Fills, runs and checks one (collective, n, count, type, op, in-place) case; returns the number
// of wrong elements and describes the first one in `first`.
// Buffers reused from case to case (fresh allocations would make page faults the main cost).
struct Memory {
  std::vector<std::vector<uint8_t>> a, b;
};

uint64_t runCase(LoopbackWorld& world, const CaseData& data, Memory& memory, Collective coll,
                 uint64_t count, weftDataType_t type, int op, bool inPlace, std::string& first) {
  const int n = world.size();
  const int root = n > 2 ? n - 2 : 0;
  const size_t es = datatypeSize(type);
  std::vector<std::vector<uint8_t>>& memA = memory.a;
  std::vector<std::vector<uint8_t>>& memB = memory.b;
  memA.resize(n);
  memB.resize(n);
  std::vector<Operation> ops(n);
  std::vector<weftRedOp_t> premul(n, weftSum);
  for (int r = 0; r < n; ++r) {
    Operation& o = ops[r];
    o.collective = coll;
    o.count = count;
    o.datatype = type;
    o.root = root;
    o.op = static_cast<weftRedOp_t>(op);
    if (op == kPreMulSum && isReducing(coll)) {
      std::array<uint8_t, 8> scalar{};
      encode(type, premulScalar(type), scalar.data());
      premul[r] = world.comms[r]->redOps().createPreMulSum(scalar.data(), type,
                                                           weftScalarHostImmediate);
      o.op = premul[r];
    }
    const uint64_t sendN = sendElements(o, r, n), recvN = recvElements(o, r, n);
    const uint8_t* input = data.inputs[r].data();
    if (inPlace && sendN > 0 && recvN > 0) {
      // NCCL's in-place forms: the smaller buffer sits inside the larger one.
      uint64_t offset = 0;
      if (coll == Collective::AllGather || coll == Collective::ReduceScatter)
        offset = uint64_t(r) * count;
      if (coll == Collective::Gather || coll == Collective::Scatter) offset = uint64_t(root) * count;
      std::vector<uint8_t>& m = memA[r];
      m.assign(std::max(sendN, recvN) * es, 0xEE);
      uint8_t* sendAt = sendN >= recvN ? m.data() : m.data() + offset * es;
      std::memcpy(sendAt, input, sendN * es);
      o.sendbuff = sendAt;
      o.recvbuff = sendN >= recvN ? m.data() + offset * es : m.data();
    } else {
      memA[r].assign(input, input + sendN * es);
      memB[r].assign(recvN * es, 0xEE);
      o.sendbuff = sendN ? memA[r].data() : nullptr;
      o.recvbuff = recvN ? memB[r].data() : nullptr;
    }
  }
  world.run(ops);
  for (int r = 0; r < n; ++r)
    if (premul[r] != weftSum) world.comms[r]->redOps().destroy(premul[r]);

  uint64_t wrong = 0;
  auto out = [&](int r, uint64_t e) { return static_cast<const uint8_t*>(ops[r].recvbuff) + e * es; };
  auto checkValue = [&](int r, uint64_t e, double want) {
    const double got = decode(type, out(r, e));
    if (matches(type, op, got, want)) return;
    if (wrong++ == 0) first = fmt::format("rank {} element {}: got {} want {}", r, e, got, want);
  };
  // Moved data must arrive bit for bit: block `block` of rank r's output equals `count`
  // elements of rank q's input from element `from`.
  auto checkBlock = [&](int r, uint64_t block, int q, uint64_t from) {
    const uint8_t* want = data.inputs[q].data() + from * es;
    if (std::memcmp(out(r, block * count), want, count * es) == 0) return;
    for (uint64_t e = 0; e < count; ++e)
      if (std::memcmp(out(r, block * count + e), want + e * es, es) != 0) {
        if (wrong++ == 0)
          first = fmt::format("rank {} element {}: not rank {}'s element {}", r,
                              block * count + e, q, from + e);
      }
  };
  // Reduced results: a fast bitwise comparison with the encoded reference, and element by
  // element (by value, which also accepts -0 for +0 and the average's tolerance) otherwise.
  auto checkReduced = [&](int r, uint64_t from) {
    if (std::memcmp(out(r, 0), data.reducedBits.data() + from * es, count * es) == 0) return;
    for (uint64_t e = 0; e < count; ++e) checkValue(r, e, data.reduced[from + e]);
  };
  for (int r = 0; r < n; ++r) {
    const uint64_t c = count;
    switch (coll) {
      case Collective::AllReduce: checkReduced(r, 0); break;
      case Collective::Reduce:
        if (r == root) checkReduced(r, 0);
        break;
      case Collective::ReduceScatter: checkReduced(r, uint64_t(r) * c); break;
      case Collective::AllGather:
        for (int q = 0; q < n; ++q) checkBlock(r, q, q, 0);
        break;
      case Collective::Broadcast: checkBlock(r, 0, root, 0); break;
      case Collective::AlltoAll:
        for (int q = 0; q < n; ++q) checkBlock(r, q, q, uint64_t(r) * c);
        break;
      case Collective::Gather:
        if (r == root)
          for (int q = 0; q < n; ++q) checkBlock(r, q, q, 0);
        break;
      case Collective::Scatter: checkBlock(r, 0, root, uint64_t(r) * c); break;
      default: break;
    }
  }
  return wrong;
}

void sweep(Collective coll, int minRanks, int maxRanks) {
  for (int n = minRanks; n <= maxRanks; ++n) {
    LoopbackWorld world(n, kChunkBytes);
    Memory memory;
    for (weftDataType_t type : kAllTypes)
      for (int op : kAllOps) {
        if (!isReducing(coll) && op != weftSum) continue;
        const CaseData data(coll, n, type, op);
        for (uint64_t count : kCounts)
          for (bool inPlace : {false, true}) {
            std::string first;
            const uint64_t wrong = runCase(world, data, memory, coll, count, type, op, inPlace, first);
            if (wrong == 0) continue;
            FAIL(collectiveName(coll) << " n=" << n << " count=" << count << " "
                 << datatypeName(type) << " " << opName(op)
                 << (inPlace ? " in-place" : " out-of-place") << ": " << wrong
                 << " wrong; first: " << first);
          }
      }
  }
}

}  // namespace

TEST_CASE("allreduce is exact for every datatype x op, 1..17 ranks, in and out of place") {
  sweep(Collective::AllReduce, 1, 17);
}
TEST_CASE("reduce-scatter is exact for every datatype x op on 1..9 ranks") {
  sweep(Collective::ReduceScatter, 1, 9);
}
TEST_CASE("reduce-scatter is exact for every datatype x op on 10..13 ranks") {
  sweep(Collective::ReduceScatter, 10, 13);
}
TEST_CASE("reduce-scatter is exact for every datatype x op on 14..15 ranks") {
  sweep(Collective::ReduceScatter, 14, 15);
}
TEST_CASE("reduce-scatter is exact for every datatype x op on 16..17 ranks") {
  sweep(Collective::ReduceScatter, 16, 17);
}
TEST_CASE("reduce is exact for every datatype x op, 1..17 ranks, in and out of place") {
  sweep(Collective::Reduce, 1, 17);
}
TEST_CASE("allgather delivers every block for every datatype, 1..17 ranks") {
  sweep(Collective::AllGather, 1, 17);
}
TEST_CASE("broadcast delivers the root's data for every datatype, 1..17 ranks") {
  sweep(Collective::Broadcast, 1, 17);
}
TEST_CASE("alltoall delivers every block for every datatype, 1..17 ranks") {
  sweep(Collective::AlltoAll, 1, 17);
}
TEST_CASE("gather and scatter deliver every block for every datatype, 1..17 ranks") {
  sweep(Collective::Gather, 1, 17);
  sweep(Collective::Scatter, 1, 17);
}

TEST_CASE("send/recv rings inside a group complete for 1..17 ranks, including sends to self") {
  for (int n = 1; n <= 17; ++n) {
    LoopbackWorld world(n, kChunkBytes);
    for (uint64_t count : {uint64_t{0}, uint64_t{1}, uint64_t{65537}}) {
      std::vector<std::vector<int32_t>> out(n, std::vector<int32_t>(count, -1)),
          in(n, std::vector<int32_t>(count));
      groupStart();
      for (int r = 0; r < n; ++r) {
        for (uint64_t e = 0; e < count; ++e) in[r][e] = int32_t(r * 1000003 + e);
        Operation s, v;
        s.collective = Collective::Send;
        s.sendbuff = in[r].data();
        s.count = count;
        s.datatype = weftInt32;
        s.root = (r + 1) % n;
        v.collective = Collective::Recv;
        v.recvbuff = out[r].data();
        v.count = count;
        v.datatype = weftInt32;
        v.root = (r + n - 1) % n;
        // Everyone sends first, then receives: deadlocks unless the group posts both at once.
        submit({world.comms[r], s, nullptr});
        submit({world.comms[r], v, nullptr});
      }
      groupEnd();
      for (int r = 0; r < n; ++r)
        for (uint64_t e = 0; e < count; ++e)
          REQUIRE(out[r][e] == int32_t(((r + n - 1) % n) * 1000003 + e));
    }
  }
}
