// The hierarchical allreduce through the real launch path over loopback communicators that
// pretend to live on several hosts (Comm::setHostOfRank): even and uneven hosts, hosts of one
// rank, ranks of a host not contiguous, a host with more ranks than the others; counts below
// and above the number of shards x hosts; in and out of place; one datatype per element size
// and every operator, against tests/support/reference. WEFT_TEST_QUICK caps the counts at 5003
// (support/quick.hpp).
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "support/collective_case.hpp"
#include "support/quick.hpp"
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

const uint64_t kHierarchicalCounts[] = {0, 1, 2, 5, 7, 1023, 65537};

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
            const CaseInputs inputs(shape, sweepCount(65537));
            for (uint64_t count : kHierarchicalCounts)
              for (bool inPlace : {false, true}) {
                shape.count = sweepCount(count);
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

namespace {

// A broadcast's traffic between hosts, from the schedules alone: rounds[h] is when the first
// chunk reaches host h, counting one round per message a host sends to another host, one after
// the other in schedule order (a host's link carries one at a time); sent[h] the bytes host h
// sends to other hosts.
struct BroadcastCrossing {
  std::vector<int> rounds;
  std::vector<uint64_t> sent;
};

BroadcastCrossing broadcastCrossing(const std::vector<int>& hosts, int root, uint64_t count,
                                    uint64_t chunkBytes) {
  const int n = static_cast<int>(hosts.size());
  const int H = *std::max_element(hosts.begin(), hosts.end()) + 1;
  BroadcastCrossing out{std::vector<int>(H, -1), std::vector<uint64_t>(H, 0)};
  std::vector<std::vector<int>> feeds(H);  // host -> hosts its first chunk goes to
  for (int r = 0; r < n; ++r) {
    CollectiveShape s;
    s.collective = Collective::Broadcast;
    s.nranks = n;
    s.rank = r;
    s.root = root;
    s.count = count;
    s.elemSize = 4;
    s.chunkBytes = chunkBytes;
    s.hostOfRank = hosts;
    std::vector<int> seen(n, 0);  // messages to each peer so far: the first one is chunk 0's
    for (const Step& step : buildHierarchical(s).steps) {
      if (step.kind != StepKind::Send || hosts[step.peer] == hosts[r]) continue;
      out.sent[hosts[r]] += step.bytes;
      if (seen[step.peer]++ == 0) feeds[hosts[r]].push_back(hosts[step.peer]);
    }
  }
  std::vector<int> queue{hosts[root]};
  out.rounds[hosts[root]] = 0;
  for (size_t i = 0; i < queue.size(); ++i) {
    const int from = queue[i];
    for (size_t k = 0; k < feeds[from].size(); ++k) {
      const int g = feeds[from][k];
      if (out.rounds[g] >= 0) continue;
      out.rounds[g] = out.rounds[from] + static_cast<int>(k) + 1;
      queue.push_back(g);
    }
  }
  return out;
}

int ceilLog2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

}  // namespace

TEST_CASE("hierarchical broadcast of one chunk reaches every host in ceil(log2 H) rounds") {
  for (int H : {2, 3, 5, 8, 13, 16}) {
    std::vector<int> hosts;  // two ranks per host
    for (int h = 0; h < H; ++h) hosts.insert(hosts.end(), {h, h});
    for (int root : {0, 3 % (2 * H), 2 * H - 1}) {
      const BroadcastCrossing c = broadcastCrossing(hosts, root, 1000, 1 << 16);
      INFO("hosts " << H << " root " << root);
      CHECK(*std::min_element(c.rounds.begin(), c.rounds.end()) == 0);  // every host reached
      CHECK(*std::max_element(c.rounds.begin(), c.rounds.end()) == ceilLog2(H));
    }
  }
}

TEST_CASE("hierarchical broadcast of many chunks sends the buffer over each host link once") {
  // 64 chunks over a few hosts: the chain, where no host sends more than the buffer away.
  for (int H : {2, 3, 4, 6}) {
    std::vector<int> hosts;
    for (int h = 0; h < H; ++h) hosts.insert(hosts.end(), {h, h, h});
    const uint64_t count = 64 * 1024, bytes = count * 4;
    const BroadcastCrossing c = broadcastCrossing(hosts, 1, count, 4096);
    INFO("hosts " << H);
    uint64_t total = 0;
    for (int h = 0; h < H; ++h) {
      CHECK(c.sent[h] <= bytes);
      total += c.sent[h];
    }
    CHECK(total == (H - 1) * bytes);  // every other host receives the buffer exactly once
  }
}

TEST_CASE("hierarchical broadcast of a few chunks over many hosts pipelines down a binary tree") {
  // 16 hosts, 4 chunks: each host receives the buffer once and none sends it more than twice
  // (a binomial root would send it 4 times); the first chunk needs fewer rounds than a chain's
  // 15.
  std::vector<int> hosts;
  for (int h = 0; h < 16; ++h) hosts.push_back(h);
  const uint64_t count = 4 * 1024, bytes = count * 4;
  const BroadcastCrossing c = broadcastCrossing(hosts, 5, count, 4096);
  uint64_t total = 0;
  for (int h = 0; h < 16; ++h) {
    INFO("host " << h);
    CHECK(c.sent[h] <= 2 * bytes);
    total += c.sent[h];
  }
  CHECK(total == 15 * bytes);
  CHECK(*std::min_element(c.rounds.begin(), c.rounds.end()) == 0);
  CHECK(*std::max_element(c.rounds.begin(), c.rounds.end()) < 15);
}

TEST_CASE("hierarchical broadcast delivers the root's buffer over many hosts, whatever the tree") {
  // Counts of 1, 3, 7 and 65 chunks of 4096 bytes select the binomial tree, the binary tree and
  // the chain over 16 hosts; 9 hosts of 1 to 3 ranks, some not contiguous, mix them.
  const std::vector<std::vector<int>> layouts = {
      {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
      {0, 0, 1, 2, 2, 2, 3, 4, 4, 5, 6, 7, 7, 8, 0, 5},
  };
  const Algorithm* algo = findAlgorithm(Collective::Broadcast, "hierarchical");
  REQUIRE(algo != nullptr);
  for (const std::vector<int>& hosts : layouts) {
    const int n = static_cast<int>(hosts.size());
    LoopbackWorld world(n, 4096);
    for (auto& c : world.comms) {
      c->setHostOfRank(hosts);
      c->overrides().algorithm[static_cast<int>(Collective::Broadcast)] = algo;
    }
    std::vector<RankBuffers> buffers(n);
    for (int root : {0, 6, n - 1}) {
      CaseShape shape{Collective::Broadcast, n, root, 0, weftFloat32, weftSum};
      const CaseInputs inputs(shape, 65 * 1024);
      for (uint64_t count : {uint64_t{1}, uint64_t{3000}, uint64_t{7000}, uint64_t{65 * 1024}})
        for (bool inPlace : {false, true}) {
          shape.count = count;
          const CaseOutcome bad = runCase(world, buffers, shape, inPlace, inputs);
          if (bad.rank >= 0)
            FAIL("hosts " << describe(hosts) << " rank " << bad.rank << " "
                          << describeCase(shape, inPlace) << ": " << bad.wrong
                          << " wrong; first: " << bad.first);
        }
    }
  }
}
