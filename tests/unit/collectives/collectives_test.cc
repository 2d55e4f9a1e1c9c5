// Every collective through the real launch path over loopback communicators: every rank count
// 1..17, counts {0, 1, 2, 7, 1023, 65537} (with 4 KiB pipeline chunks, so the large counts span
// many; see kFullBlocksUpTo), every operator, in place and out of place, against
// tests/support/reference; every datatype up to 9 ranks, one per element size above (see
// kOnePerSize, tests/support/collective_case.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <vector>

#include "algorithms/reduce/datatype.hpp"
#include "algorithms/algorithm.hpp"
#include "support/collective_case.hpp"
#include "support/quick.hpp"
#include "unit/collectives/loopback_world.hpp"

using namespace weft;
using namespace weft::testing;

namespace {

const uint64_t kCounts[] = {0, 1, 2, 7, 1023, 65537};
constexpr uint64_t kMaxCount = 65537;
constexpr uint64_t kChunkBytes = 4096;

// Schedules move bytes and call the reduction kernel; what they do depends on the element size,
// not on the datatype. The first algorithm of a collective runs every datatype x operator (the
// kernels' coverage); the others one datatype per element size with every operator, which keeps
// this sweep affordable as the registry grows. Above kAllTypesUpTo ranks every algorithm runs
// one datatype per element size: which datatype is reduced does not depend on the rank count.
constexpr int kAllTypesUpTo = 9;

// Where buffers hold n blocks (holdsBlocks), blocks of 65537 elements above kFullBlocksUpTo
// ranks are most of this sweep's time: there the largest block is 16411 elements (still 4 or
// more 4 KiB chunks of every datatype).
constexpr int kFullBlocksUpTo = 5;
constexpr uint64_t kLargestBlockAbove = 16411;

uint64_t caseCount(Collective coll, int n, uint64_t count) {
  if (holdsBlocks(coll) && n > kFullBlocksUpTo) count = std::min(count, kLargestBlockAbove);
  return sweepCount(count);
}

// Every count, in place and out of place, of one (ranks, datatype, operator) with `algo`.
void runCases(LoopbackWorld& world, std::vector<RankBuffers>& buffers, const Algorithm& algo,
              CaseShape shape, const CaseInputs& inputs, uint64_t chunkBytes) {
  const int n = shape.nranks;
  for (auto& c : world.comms) c->overrides().algorithm[static_cast<int>(shape.collective)] = &algo;
  for (uint64_t fullCount : kCounts)
    for (bool inPlace : {false, true}) {
      shape.count = caseCount(shape.collective, n, fullCount);
      std::vector<Operation> ops(n);
      std::vector<weftRedOp_t> premul(n, weftSum);
      for (int r = 0; r < n; ++r) {
        buffers[r].prepare(shape, r, inPlace, inputs);
        Operation& o = ops[r] = caseOperation(shape, buffers[r]);
        if (shape.op == kPreMulSum && reduces(shape.collective)) {
          std::array<uint8_t, 8> scalar{};
          encode(shape.type, premulScalar(shape.type), scalar.data());
          o.op = premul[r] = world.comms[r]->redOps().createPreMulSum(scalar.data(), shape.type,
                                                                      weftScalarHostImmediate);
        }
      }
      world.run(ops);
      for (int r = 0; r < n; ++r)
        if (premul[r] != weftSum) world.comms[r]->redOps().destroy(premul[r]);
      for (int r = 0; r < n; ++r) {
        std::string first;
        const uint64_t wrong = buffers[r].check(shape, r, inputs, first);
        if (wrong)
          FAIL(algo.name << " " << describeCase(shape, inPlace) << " chunk=" << chunkBytes << ": "
                         << wrong << " wrong; first: " << first);
      }
    }
}

// The inputs of a (ranks, datatype, operator) are built once and run by every algorithm that
// takes that datatype: building them is much of this sweep's time.
void sweep(Collective coll, int minRanks, int maxRanks, uint64_t chunkBytes = kChunkBytes) {
  std::vector<const Algorithm*> algos;
  for (const Algorithm& algo : algorithmRegistry())
    if (algo.serves(coll)) algos.push_back(&algo);
  for (int n = minRanks; n <= maxRanks; ++n) {
    if (!sweepRanks(n)) continue;
    LoopbackWorld world(n, chunkBytes);
    std::vector<RankBuffers> buffers(n);
    for (weftDataType_t type : kAllTypes) {
      if (n > kAllTypesUpTo && !onePerSize(type)) continue;
      for (int op : kAllOps) {
        if (!reduces(coll) && op != weftSum) continue;
        const CaseShape shape{coll, n, n > 2 ? n - 2 : 0, 0, type, op};
        const CaseInputs inputs(shape, kMaxCount);
        for (const Algorithm* algo : algos)
          if (algo == algos.front() || onePerSize(type))
            runCases(world, buffers, *algo, shape, inputs, chunkBytes);
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
TEST_CASE("reduce-scatter is exact for every op on 10..13 ranks") {
  sweep(Collective::ReduceScatter, 10, 13);
}
TEST_CASE("reduce-scatter is exact for every op on 14..17 ranks") {
  sweep(Collective::ReduceScatter, 14, 17);
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

TEST_CASE("pipelining with 256-byte and 1 MiB chunks gives the same exact results") {
  for (uint64_t chunk : {uint64_t{256}, uint64_t{1} << 20})
    for (Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather,
                         Collective::Broadcast, Collective::Reduce})
      sweep(c, 1, 5, chunk);
}
