// The hierarchical allreduce through the real launch path over loopback communicators that
// pretend to live on several hosts (Comm::setHostOfRank): even and uneven hosts, hosts of one
// rank, ranks of a host not contiguous, a host with more ranks than the others; counts below
// and above the number of shards x hosts; in and out of place; one datatype per element size
// and every operator, against tests/support/reference.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "support/collective_case.hpp"
#include "unit/collectives/loopback_world.hpp"

using namespace weft;
using namespace weft::testing;

namespace {

// hosts[r]: the host of rank r.
const std::vector<std::vector<int>> kLayouts = {
    {0, 0, 0, 0},                       // one host
    {0, 1},                             // 1+1
    {0, 0, 1},                          // 2+1
    {0, 1, 1},                          // 1+2
    {0, 0, 0, 1, 1},                    // 3+2
    {0, 0, 1, 1},                       // 2+2
    {0, 1, 0, 1, 0},                    // interleaved 3+2
    {0, 0, 1, 1, 2, 2, 3, 3},           // 4 hosts x 2
    {0, 0, 0, 1, 2, 2},                 // 3+1+2
    {2, 2, 0, 1, 1, 0, 2},              // ids out of order, 3 hosts
    {0, 1, 2, 3, 4},                    // 5 hosts of one
    {0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1},  // 4+7
};

const uint64_t kCounts[] = {0, 1, 2, 5, 7, 1023, 65537};
constexpr weftDataType_t kOnePerSize[] = {weftFloat8e4m3, weftFloat16, weftFloat32, weftFloat64};

std::string describe(const std::vector<int>& hosts) {
  std::string s;
  for (int h : hosts) s += std::to_string(h);
  return s;
}

}  // namespace

namespace {

// Every layout, one and two channels (allreduce), one datatype per element size, every operator
// where the collective reduces, every root where there is one, every count, in and out of place.
void sweepLayouts(Collective coll) {
  const Algorithm* algo = findAlgorithm(coll, "hierarchical");
  REQUIRE(algo != nullptr);
  for (const std::vector<int>& hosts : kLayouts)
    for (int channels : {1, 2}) {
      if (channels > 1 && !supportsChannels(coll)) continue;
      const int n = static_cast<int>(hosts.size());
      LoopbackWorld world(n, 4096);
      for (auto& c : world.comms) {
        c->setHostOfRank(hosts);
        c->overrides().algorithm[static_cast<int>(coll)] = algo;
        c->overrides().channels = channels;
      }
      std::vector<RankBuffers> buffers(n);
      for (weftDataType_t type : kOnePerSize)
        for (int op : {weftSum, weftProd, weftMax, weftMin, weftAvg}) {
          if (!reduces(coll) && op != weftSum) continue;
          // Every root where there is one.
          for (int root = 0; root < (coll == Collective::Broadcast ? n : 1); ++root) {
            CaseShape shape{coll, n, root, 0, type, op};
            const CaseInputs inputs(shape, 65537);
            for (uint64_t count : kCounts)
              for (bool inPlace : {false, true}) {
                shape.count = count;
                const CaseOutcome bad = runCase(world, buffers, shape, inPlace, inputs);
                if (bad.rank >= 0)
                  FAIL("hosts " << describe(hosts) << " channels " << channels << " rank "
                                << bad.rank << " " << describeCase(shape, inPlace) << ": "
                                << bad.wrong << " wrong; first: " << bad.first);
              }
          }
        }
    }
}

}  // namespace

TEST_CASE(
    "hierarchical allreduce is exact on many host layouts, every op, in and out of place, "
    "one and two channels") {
  sweepLayouts(Collective::AllReduce);
}

TEST_CASE("hierarchical allgather delivers every block on many host layouts, in and out of place") {
  sweepLayouts(Collective::AllGather);
}

TEST_CASE(
    "hierarchical reduce-scatter is exact on many host layouts, every op, in and out of "
    "place") {
  sweepLayouts(Collective::ReduceScatter);
}

namespace {

// The bytes that cross host boundaries, summed over each host's ranks, from the schedules alone.
std::vector<uint64_t> hostCrossing(Collective coll, const std::vector<int>& hosts, uint64_t count) {
  const int n = static_cast<int>(hosts.size());
  std::vector<uint64_t> crossing(hosts.back() + 1, 0);
  for (int r = 0; r < n; ++r) {
    CollectiveShape s;
    s.collective = coll;
    s.nranks = n;
    s.rank = r;
    s.count = count;
    s.elemSize = 4;
    s.chunkBytes = 1 << 16;
    s.hostOfRank = hosts;
    for (const Step& step : buildHierarchical(s).steps)
      if (step.kind == StepKind::Send && hosts[step.peer] != hosts[r])
        crossing[hosts[r]] += step.bytes;
  }
  return crossing;
}

}  // namespace

TEST_CASE("hierarchical broadcast delivers the root's buffer on many host layouts, from every "
          "root") {
  sweepLayouts(Collective::Broadcast);
}

TEST_CASE("hierarchical alltoall delivers every block on many host layouts, in and out of place") {
  sweepLayouts(Collective::AlltoAll);
}

TEST_CASE("hierarchical reduce-scatter: every host sends (H-1)/H of a rank's input over its link") {
  for (const std::vector<int>& hosts :
       {std::vector<int>{0, 0, 1, 1}, std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3},
        std::vector<int>{0, 0, 0, 1, 1, 1}}) {
    const int n = static_cast<int>(hosts.size());
    const uint64_t H = static_cast<uint64_t>(hosts.back() + 1);
    const uint64_t count = 4096;  // per rank; each input holds n blocks of it
    const std::vector<uint64_t> crossing = hostCrossing(Collective::ReduceScatter, hosts, count);
    for (uint64_t h = 0; h < H; ++h) {
      INFO("hosts " << describe(hosts) << " host " << h);
      CHECK(crossing[h] == (H - 1) * n * count * 4 / H);
    }
  }
}

TEST_CASE("hierarchical allreduce: every host sends 2(H-1)/H of the buffer over its link") {
  for (const std::vector<int>& hosts :
       {std::vector<int>{0, 0, 1, 1}, std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3},
        std::vector<int>{0, 0, 0, 1, 1, 1}}) {
    const uint64_t H = static_cast<uint64_t>(hosts.back() + 1);
    const uint64_t count = uint64_t{3} << 20;  // divisible by every shards x hosts here
    const std::vector<uint64_t> crossing = hostCrossing(Collective::AllReduce, hosts, count);
    for (uint64_t h = 0; h < H; ++h) {
      INFO("hosts " << describe(hosts) << " host " << h);
      CHECK(crossing[h] == 2 * (H - 1) * count * 4 / H);
    }
  }
}

TEST_CASE("hierarchical alltoall: one message per lane and pair of hosts, carrying every block") {
  // 3 hosts of 3, 2 and 3 ranks: m = 2 lanes. Between hosts, every rank of lane i (local rank
  // i < m) sends one message to each other host, and the bytes add up to every block whose
  // source and destination hosts differ.
  const std::vector<int> hosts{0, 0, 0, 1, 1, 2, 2, 2};
  const int n = static_cast<int>(hosts.size());
  const uint64_t count = 16, blockBytes = count * 4;
  uint64_t messages = 0, bytes = 0, expectedBlocks = 0;
  for (int r = 0; r < n; ++r) {
    CollectiveShape s;
    s.collective = Collective::AlltoAll;
    s.nranks = n;
    s.rank = r;
    s.count = count;
    s.elemSize = 4;
    s.hostOfRank = hosts;
    for (const Step& step : buildHierarchical(s).steps)
      if (step.kind == StepKind::Send && hosts[step.peer] != hosts[r]) {
        ++messages;
        bytes += step.bytes;
      }
    for (int q = 0; q < n; ++q) expectedBlocks += hosts[q] != hosts[r];
  }
  CHECK(messages == 3 * 2 * 2);  // hosts x other hosts x lanes
  CHECK(bytes == expectedBlocks * blockBytes);
}
