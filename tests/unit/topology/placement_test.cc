// Rank placement and ring orders: on the two-package host the ring visits each package's ranks
// contiguously (two package crossings, counted here from the CPU numbers), across hosts it
// crosses each host boundary once, and every rank that merges the same views gets the same
// picture and ring.
#include <catch2/catch.hpp>
#include <numeric>

#include "fixture.hpp"
#include "lib/base/error.hpp"
#include "lib/topology/picture.hpp"
#include "lib/topology/plan.hpp"

using namespace weft;
using namespace weft::topology;
using weft::testing::fixture;

namespace {

// Package of a CPU of the two-package fixture: CPUs 0-7 are package 0, 8-15 package 1.
int packageOfCpu(int cpu) {
  return cpu < 8 ? 0 : 1;
}

int handCountedCrossings(const std::vector<RankPlace>& places, const std::vector<int>& order) {
  int n = 0;
  for (size_t i = 0; i < order.size(); ++i)
    n += packageOfCpu(places[order[i]].cpu) !=
         packageOfCpu(places[order[(i + 1) % order.size()]].cpu);
  return n;
}

std::vector<int> naturalOrder(size_t n) {
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  return order;
}

}  // namespace

TEST_CASE(
    "on the two-package host the ring crosses packages exactly twice, however ranks were mapped") {
  const Graph& g = fixture("two-package.xml");
  for (MapBy by : {MapBy::Core, MapBy::Package})
    for (int n : {2, 3, 5, 8, 9, 16}) {
      INFO("ranks " << n << (by == MapBy::Core ? " by core" : " by package"));
      const std::vector<RankPlace> places = placeRanks(g, n, by);
      const std::vector<int> ring = ringOrder(places);
      std::vector<int> sorted = ring;
      std::sort(sorted.begin(), sorted.end());
      CHECK(sorted == naturalOrder(n));  // a permutation of the ranks
      const bool bothPackages = by == MapBy::Package || n > 8;
      CHECK(handCountedCrossings(places, ring) == (bothPackages ? 2 : 0));
      CHECK(crossings(places, ring, Level::Package) == handCountedCrossings(places, ring));
    }
  // Mapped by package, rank order alternates packages: the natural ring would cross 16 times.
  const std::vector<RankPlace> places = placeRanks(g, 16, MapBy::Package);
  CHECK(handCountedCrossings(places, naturalOrder(16)) == 16);
  CHECK(groupsAt(places, Level::Package) ==
        std::vector<int>{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1});
}

TEST_CASE("too many ranks for a host is an error naming the counts") {
  CHECK_THROWS_WITH(placeRanks(fixture("two-package.xml"), 17, MapBy::Core),
                    Catch::Contains("17 ranks") && Catch::Contains("16 CPUs"));
}

namespace {

// Rank r of a round-robin job over `hosts` hosts runs on this CPU of its host (0, 2, ..., 14:
// both packages).
int cpuOf(int r, int hosts) {
  return ((r / hosts) * 2) % 16;
}

// Views of `ranks` ranks spread round robin over `hosts` copies of the two-package host.
std::vector<LocalView> roundRobinViews(int ranks, int hosts) {
  std::vector<LocalView> views(ranks);
  for (int r = 0; r < ranks; ++r) {
    views[r].hostId = "host-" + std::to_string(r % hosts);
    views[r].cpu = cpuOf(r, hosts);
    views[r].graph = fixture("two-package.xml");
  }
  return views;
}

}  // namespace

TEST_CASE("across hosts the ring crosses each host boundary once and packages twice per host") {
  for (int hosts : {2, 3, 4}) {
    INFO(hosts << " hosts");
    const std::vector<LocalView> views = roundRobinViews(8 * hosts, hosts);
    const SystemPicture p = mergeViews(views);
    CHECK(p.graph.count(NodeKind::Host) == hosts);
    CHECK(p.graph.count(NodeKind::Package) == 2 * hosts);
    // Hand count: host of rank r is r % hosts; its package is that of its CPU.
    int hostChanges = 0, packageChanges = 0;
    for (size_t i = 0; i < p.ring.size(); ++i) {
      const int a = p.ring[i], b = p.ring[(i + 1) % p.ring.size()];
      hostChanges += a % hosts != b % hosts;
      packageChanges +=
          a % hosts != b % hosts || packageOfCpu(cpuOf(a, hosts)) != packageOfCpu(cpuOf(b, hosts));
    }
    CHECK(hostChanges == hosts);
    CHECK(packageChanges == 2 * hosts);
  }
}

TEST_CASE("every rank decodes and merges the same views into the same picture and ring") {
  std::vector<LocalView> views = roundRobinViews(12, 3);
  views[5].gpu = -1;
  std::vector<std::vector<uint8_t>> wire;  // what the bootstrap's allGather hands every rank
  for (const LocalView& v : views) wire.push_back(encodeView(v));
  std::vector<int> first;
  std::string firstJson;
  for (int rank = 0; rank < 12; ++rank) {
    std::vector<LocalView> decoded;
    for (size_t r = 0; r < wire.size(); ++r)
      decoded.push_back(decodeView(wire[r], static_cast<int>(r)));
    const SystemPicture p = mergeViews(decoded);
    if (rank == 0) {
      first = p.ring;
      firstJson = formatPictureJson(p);
    }
    CHECK(p.ring == first);
    CHECK(formatPictureJson(p) == firstJson);
  }
  // And the decoded views are the encoded ones.
  const LocalView back = decodeView(wire[7], 7);
  CHECK(back.hostId == views[7].hostId);
  CHECK(back.cpu == views[7].cpu);
  CHECK(back.graph.nodes.size() == views[7].graph.nodes.size());
  CHECK(back.graph.links.size() == views[7].graph.links.size());
}

TEST_CASE("a malformed view is an error naming the rank it came from") {
  std::vector<uint8_t> bytes = encodeView(roundRobinViews(1, 1)[0]);
  bytes.resize(bytes.size() / 2);
  CHECK_THROWS_WITH(decodeView(bytes, 3),
                    Catch::Contains("rank 3") && Catch::Contains("truncated"));
  bytes.assign(16, 0xff);
  CHECK_THROWS_WITH(decodeView(bytes, 4), Catch::Contains("rank 4"));
}

TEST_CASE("the same GPU allocation gives the same rings and trees every time") {
  const Graph& g = fixture("dgx1-v100.xml");
  const std::vector<int> indexes{0, 1, 2, 4, 5};
  const std::vector<int> gpus = gpusByIndex(g, indexes);
  const GpuPlan a = planGpus(g, gpus), b = planGpus(g, gpus);
  for (auto [x, y] : {std::pair{&a.broadcast, &b.broadcast}, {&a.allreduce, &b.allreduce}}) {
    CHECK(x->ring.order == y->ring.order);
    REQUIRE(x->packed.trees.size() == y->packed.trees.size());
    for (size_t t = 0; t < x->packed.trees.size(); ++t) {
      CHECK(x->packed.trees[t].parent == y->packed.trees[t].parent);
      CHECK(x->packed.trees[t].weight == y->packed.trees[t].weight);
    }
  }
}

TEST_CASE("each DGX-1 GPU's nearest NIC is the one behind its PCIe switch") {
  const Graph& g = fixture("dgx1-v100.xml");
  for (int i = 0; i < 8; ++i) {
    const int nic = nearestNic(g, g.gpu(0, i));
    REQUIRE(nic >= 0);
    CHECK(g.nodes[nic].name == "mlx5_" + std::to_string(i / 2));
  }
  // A CPU rank of package 1 reaches the first NIC below package 1; the PCIe-only host's
  // package 1 has none, so its ranks go to the host's one NIC (package 0's).
  const std::vector<int> packages = g.nodesOf(NodeKind::Package);
  CHECK(g.nodes[nearestNic(g, packages[1])].name == "mlx5_2");
  const Graph& pcie = fixture("pcie-8gpu.xml");
  CHECK(pcie.nodes[nearestNic(pcie, pcie.gpu(0, 6))].name == "mlx5_0");
  CHECK(nearestNic(fixture("two-package.xml"),
                   fixture("two-package.xml").nodesOf(NodeKind::Package)[1]) == -1);
}
