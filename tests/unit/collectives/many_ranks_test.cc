// Every registered algorithm through the real launch path over loopback communicators of 18..64
// ranks (primes, powers of two and their neighbours), with counts smaller than the rank count,
// one exact datatype and a reducing operator per collective; the 1..17 sweep with every
// datatype x operator is collectives_test.cc. Also: schedules split into parallel channels give
// the same results.
#include <catch2/catch.hpp>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "support/collective_case.hpp"
#include "unit/collectives/loopback_world.hpp"

using namespace weft;
using namespace weft::testing;

namespace {

// Runs `algo` for `coll` on n ranks over `counts` (in place and not) and checks every rank.
void checkAlgorithm(const Algorithm& algo, Collective coll, int n,
                    const std::vector<uint64_t>& counts, uint64_t chunkBytes, int channels,
                    weftDataType_t type, int op) {
  LoopbackWorld world(n, chunkBytes);
  for (auto& c : world.comms) {
    c->overrides().algorithm[static_cast<int>(coll)] = &algo;
    c->overrides().channels = channels;
  }
  std::vector<RankBuffers> buffers(n);
  CaseShape shape{coll, n, n / 3, 0, type, reduces(coll) ? op : weftSum};
  const CaseInputs inputs(shape, *std::max_element(counts.begin(), counts.end()));
  for (uint64_t count : counts)
    for (bool inPlace : {false, true}) {
      shape.count = count;
      const CaseOutcome bad = runCase(world, buffers, shape, inPlace, inputs);
      if (bad.rank >= 0)
        FAIL(algo.name << " x" << channels << " " << describeCase(shape, inPlace)
                       << " chunk=" << chunkBytes << " rank " << bad.rank << ": " << bad.wrong
                       << " wrong; first: " << bad.first);
    }
}

constexpr Collective kCollectives[] = {
    Collective::AllReduce,     Collective::Broadcast, Collective::Reduce, Collective::AllGather,
    Collective::ReduceScatter, Collective::AlltoAll,  Collective::Gather, Collective::Scatter};

void sweepRanks(std::initializer_list<int> rankCounts) {
  for (int n : rankCounts)
    for (Collective coll : kCollectives)
      for (const Algorithm& algo : algorithmRegistry()) {
        if (!algo.serves(coll)) continue;
        // Fewer elements than ranks (empty blocks), exactly n, and a few chunks' worth.
        const std::vector<uint64_t> counts = {0, 1, static_cast<uint64_t>(n - 1),
                                              static_cast<uint64_t>(n) + 3, 3000};
        checkAlgorithm(algo, coll, n, counts, 1024, 1, weftInt32, weftSum);
      }
}

}  // namespace

TEST_CASE("every algorithm is exact on 18..31 ranks (primes, 2^k +- 1), counts below n") {
  sweepRanks({18, 19, 23, 29, 31});
}

TEST_CASE("every algorithm is exact on 32..64 ranks (primes, powers of two), counts below n") {
  sweepRanks({32, 33, 37, 47, 61, 63, 64});
}

TEST_CASE("two parallel channels give the same exact results as one, 1..17 ranks") {
  for (int n = 1; n <= 17; ++n)
    for (Collective coll : {Collective::AllReduce, Collective::Broadcast, Collective::Reduce})
      for (const Algorithm& algo : algorithmRegistry()) {
        if (!algo.serves(coll) || !algo.usesChunks(coll)) continue;
        for (int op : {weftSum, weftMax})
          checkAlgorithm(algo, coll, n, {0, 1, 7, 1023, 20000}, 4096, 2, weftFloat32, op);
      }
}
