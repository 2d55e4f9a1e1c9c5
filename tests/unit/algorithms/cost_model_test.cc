// The cost model replays schedules; on a flat network with free reductions its answers must be
// the textbook formulas of the algorithms (Thakur, Rabenseifner and Gropp 2005), and replaying
// one representative per symmetry class must give what replaying every rank gives.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/cost/simulator.hpp"
#include "algorithms/tree_pattern.hpp"

using namespace weft;

namespace {

constexpr double kAlpha = 5e-6;      // seconds
constexpr double kBandwidth = 25e9;  // bytes per second
constexpr uint64_t kNoChunking = uint64_t{1} << 40;

// One rank per host: every flow has its links to itself.
MachineModel flat(int p) {
  MachineModel m;
  m.nranks = p;
  m.ranksPerHost = 1;
  m.inter = {kAlpha * 1e6, kBandwidth / 1e9};
  m.intra = m.inter;
  return m;
}

double simulated(const char* name, Collective c, int p, uint64_t bytes, SimOptions options = {}) {
  const Algorithm* a = findAlgorithm(c, name);
  REQUIRE(a != nullptr);
  CollectiveShape s{c, p, 0, bytes / 4, 4, 0, false, kNoChunking};
  return simulate(*a, s, flat(p), options).seconds;
}

// Every p in 2..64, then a sampling up to 1024 (powers of two, their neighbours, primes).
const std::vector<int> kRankCounts = [] {
  std::vector<int> p;
  for (int n = 2; n <= 64; ++n) p.push_back(n);
  for (int n : {100, 127, 128, 129, 251, 255, 256, 257, 384, 509, 511, 512, 513, 700, 1000, 1021,
                1023, 1024})
    p.push_back(n);
  return p;
}();

// Bytes divisible by every block split the algorithms make at these rank counts.
uint64_t bytesFor(int p) {
  return uint64_t{4} * p * 1024 * 4;
}

}  // namespace

TEST_CASE("simulated ring allreduce is 2(p-1)a + 2(p-1)/p n/b for p = 2..1024") {
  for (int p : kRankCounts) {
    const double n = static_cast<double>(bytesFor(p));
    const double textbook = 2 * (p - 1) * kAlpha + 2.0 * (p - 1) / p * n / kBandwidth;
    INFO("p=" << p);
    CHECK(simulated("ring", Collective::AllReduce, p, bytesFor(p)) ==
          Approx(textbook).epsilon(0.01));
  }
}

TEST_CASE("simulated halving-doubling allreduce is 2 lg p a + 2(p-1)/p n/b, plus the fold") {
  for (int p : kRankCounts) {
    const int q = floorPowerOfTwo(p);
    const double lg = std::log2(q), n = static_cast<double>(bytesFor(p));
    // Non-powers of two: one whole-vector message in (fold) and one out (unfold).
    const double fold = p == q ? 0 : 2 * (kAlpha + n / kBandwidth);
    const double textbook = 2 * lg * kAlpha + 2.0 * (q - 1) / q * n / kBandwidth + fold;
    INFO("p=" << p);
    CHECK(simulated("halving-doubling", Collective::AllReduce, p, bytesFor(p)) ==
          Approx(textbook).epsilon(0.01));
  }
}

// (Between the two sizes, eager messages of the ranks that do not fold start at once and share
// the folding ranks' links with the fold: the model is then slower than the formula, as it
// should be.)
TEST_CASE("simulated recursive-doubling allreduce is lg p (a + n/b), plus the fold") {
  for (int p : kRankCounts)
    for (uint64_t bytes : {uint64_t{8}, bytesFor(p)}) {
      const int q = floorPowerOfTwo(p);
      const double n = static_cast<double>(bytes);
      const double rounds = std::log2(q) + (p == q ? 0 : 2);
      const double textbook = rounds * (kAlpha + n / kBandwidth);
      INFO("p=" << p << " bytes=" << bytes);
      CHECK(simulated("recursive-doubling", Collective::AllReduce, p, bytes) ==
            Approx(textbook).epsilon(0.01));
    }
}

TEST_CASE("replaying one rank per symmetry class gives what replaying every rank gives") {
  for (const Algorithm& a : algorithmRegistry()) {
    if (a.symmetry == Symmetry::None) continue;
    for (int c = 0; c < kNumCollectives; ++c) {
      const Collective coll = static_cast<Collective>(c);
      if (!a.serves(coll)) continue;
      for (int p : {8, 16, 32, 64})
        for (int perHost : {1, 2, 4, 8})
          for (uint64_t count : {uint64_t{64}, uint64_t{1} << 16}) {
            MachineModel m;
            m.nranks = p;
            m.ranksPerHost = perHost;
            m.intra = {1, 200};
            m.inter = {5, 25};
            m.reduceGBps = 20;
            m.copyGBps = 40;
            std::vector<int> hosts;  // the model's: rank r on host r / perHost
            for (int r = 0; r < p; ++r) hosts.push_back(r / perHost);
            CollectiveShape s{coll, p, 0, count, 4, 0, false, 16384};
            s.hostOfRank = hosts;
            SimOptions full;
            full.full = true;
            const SimResult fast = simulate(a, s, m), slow = simulate(a, s, m, full);
            INFO(a.name << " " << collectiveName(coll) << " p=" << p << " perHost=" << perHost
                        << " count=" << count);
            // A root breaks every symmetry: rooted collectives replay every rank.
            const bool symmetric = perHost < p && coll != Collective::Broadcast &&
                                   coll != Collective::Reduce && coll != Collective::Gather &&
                                   coll != Collective::Scatter;
            CHECK(fast.symmetric == symmetric);
            CHECK(fast.replayedRanks == (symmetric ? perHost : p));
            CHECK(fast.seconds == Approx(slow.seconds).epsilon(1e-9));
          }
    }
  }
}

TEST_CASE("no schedule stalls when every send waits for its receive (rendezvous), 1..64 ranks") {
  for (const Algorithm& a : algorithmRegistry())
    for (int c = 0; c < kNumCollectives; ++c) {
      const Collective coll = static_cast<Collective>(c);
      if (!a.serves(coll)) continue;
      for (int p = 1; p <= 64; ++p)
        for (uint64_t count : {uint64_t{1}, uint64_t{5000}})
          for (int root : {0, p / 2}) {
            MachineModel m = flat(p);
            m.ranksPerHost = 4;
            const CollectiveShape s{coll, p, 0, count, 4, root, false, 4096};
            SimOptions rendezvous;
            rendezvous.rendezvous = true;
            INFO(a.name << " " << collectiveName(coll) << " p=" << p << " count=" << count
                        << " root=" << root);
            REQUIRE_NOTHROW(simulate(a, s, m, rendezvous));
          }
    }
}

TEST_CASE("on a machine given link by link, flows take their routes and share links max-min fairly") {
  // Rank 0 sends 1 GB and rank 1 sends 3 GB to rank 2. Link 0 (rank 0's uplink, 5 GB/s) and
  // link 1 (rank 1's, 40 GB/s) lead into link 2 (20 GB/s) and on to rank 2. Max-min: rank 0's
  // flow is held to 5 by its uplink, rank 1's takes the other 15 of link 2; both finish at
  // 0.2 s (1 GB at 5, 3 GB at 15). (Equal shares of link 2 would leave 5 GB/s unused and take
  // 0.25 s.)
  LinkRoutes links;
  links.capacityGBps = {5, 40, 20};
  links.route.assign(3, std::vector<std::vector<uint32_t>>(3));
  links.route[0][2] = {0, 2};
  links.route[1][2] = {1, 2};
  MachineModel model;
  model.nranks = model.ranksPerHost = 3;
  model.intra = {0, 0};
  model.links = &links;
  const uint64_t gb = 1000000000;
  CollectiveShape shape;
  shape.nranks = 3;
  const SimResult r = simulateSchedules(
      [&](const CollectiveShape& s) {
        if (s.rank < 2) return buildSend(2, s.rank == 0 ? gb : 3 * gb);
        ScheduleBuilder b;
        b.recv(0, {BufferId::Recv, 0}, gb);
        b.recv(1, {BufferId::Recv, gb}, 3 * gb);
        return std::move(b).finish();
      },
      shape, model);
  CHECK(r.seconds == Approx(0.2).epsilon(1e-6));
  // Alone, rank 1's flow is held by link 2: 3 GB at 20 GB/s.
  const SimResult alone = simulateSchedules(
      [&](const CollectiveShape& s) {
        if (s.rank == 1) return buildSend(2, 3 * gb);
        if (s.rank == 2) return buildRecv(1, 3 * gb);
        return ScheduleBuilder().finish();
      },
      shape, model);
  CHECK(alone.seconds == Approx(0.15).epsilon(1e-6));
}

TEST_CASE(
    "a per-message cost adds o to each step: ring 2(p-1)(a+o), recursive doubling lg p (a+o)") {
  constexpr double kOverhead = 7e-6;  // seconds of sender CPU per message
  for (int p : {2, 3, 4, 8, 16, 64}) {
    MachineModel m = flat(p);
    m.inter.messageUs = m.intra.messageUs = kOverhead * 1e6;
    const double n = static_cast<double>(bytesFor(p));
    const double ring = 2 * (p - 1) * (kAlpha + kOverhead) + 2.0 * (p - 1) / p * n / kBandwidth;
    CollectiveShape s{Collective::AllReduce, p, 0, bytesFor(p) / 4, 4, 0, false, kNoChunking};
    INFO("p=" << p);
    CHECK(simulate(*findAlgorithm(Collective::AllReduce, "ring"), s, m).seconds ==
          Approx(ring).epsilon(0.01));
    if ((p & (p - 1)) != 0) continue;  // recursive doubling without the fold
    const double lg = std::log2(p);
    CollectiveShape small{Collective::AllReduce, p, 0, 2, 4, 0, false, kNoChunking};
    const double rd = lg * (kAlpha + kOverhead + 8 / kBandwidth);
    CHECK(simulate(*findAlgorithm(Collective::AllReduce, "recursive-doubling"), small, m).seconds ==
          Approx(rd).epsilon(0.01));
  }
}

TEST_CASE("weft's shared memory: a large message is a copy on the receiver's CPU, in line with "
          "its reductions") {
  // 2 ranks on one host, ring allreduce of 2 MiB in one chunk per step: reduce-scatter sends
  // 1 MiB each way and reduces it, allgather sends 1 MiB each way. As flows, the transfers and
  // the reduction of the other rank overlap; as receiver copies, every rank's CPU does
  // copy + reduce + copy, one after the other.
  const Algorithm* ring = findAlgorithm(Collective::AllReduce, "ring");
  REQUIRE(ring != nullptr);
  MachineModel m;
  m.nranks = 2;
  m.ranksPerHost = 2;
  m.intra = {1, 10};  // 1 us, 10 GB/s
  m.reduceGBps = 5;
  const uint64_t bytes = uint64_t{2} << 20, half = bytes / 2;
  const CollectiveShape s{Collective::AllReduce, 2, 0, bytes / 4, 4, 0, false, half};
  const double asFlows = simulate(*ring, s, m).seconds;
  m.intraCopiedByReceiver = true;
  const double asCopies = simulate(*ring, s, m).seconds;
  const double copy = half / 10e9, reduce = half / 5e9, latency = 1e-6;
  CHECK(asCopies == Approx(2 * (latency + copy) + reduce).epsilon(1e-6));
  CHECK(asFlows <= asCopies);
  // Eager messages (at most eagerBytes) stay flows: their copies are the sender's and tiny.
  const CollectiveShape small{Collective::AllReduce, 2, 0, 1024, 4, 0, false, 2048};
  m.intraCopiedByReceiver = false;
  const double smallFlows = simulate(*ring, small, m).seconds;
  m.intraCopiedByReceiver = true;
  CHECK(simulate(*ring, small, m).seconds == smallFlows);
}
