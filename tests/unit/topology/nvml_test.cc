// NVLink read through NVML (lib/topology/nvml.cc), against fake_nvml.c: a stand-in
// libnvidia-ml.so.1 that ctest puts first on LD_LIBRARY_PATH for this program only. The
// expected bandwidths are worked out here from the links fake_nvml.c describes.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "fixture.hpp"
#include "lib/topology/nvml.hpp"

using namespace weft::topology;
using weft::testing::fixture;

namespace {

int gpuOnBus(const Graph& g, const std::string& bus) {
  for (int n : g.nodesOf(NodeKind::Gpu))
    if (g.nodes[n].busId.rfind("0000:" + bus + ":00", 0) == 0) return n;
  FAIL("no GPU on bus " << bus);
  return -1;
}

}  // namespace

TEST_CASE("NVML's NVLinks join the hwloc picture by PCI bus id, switches and hidden GPUs apart") {
  Graph g = fixture("pcie-8gpu.xml");
  REQUIRE(g.count(NodeKind::NvSwitch) == 0);
  std::vector<int> gpus;
  std::vector<std::vector<double>> matrix;
  nvmlNvLinks(g, gpus, matrix);

  // Eight of NVML's nine devices are in the picture, in NVML's order (bus 03 before 02); the
  // ninth (bus 81) is not.
  REQUIRE(gpus.size() == 8);
  CHECK(gpus[0] == gpuOnBus(g, "03"));
  CHECK(gpus[1] == gpuOnBus(g, "02"));
  auto at = [&](const std::string& a, const std::string& b) {
    size_t i = 0, j = 0;
    while (i < gpus.size() && gpus[i] != gpuOnBus(g, a)) ++i;
    while (j < gpus.size() && gpus[j] != gpuOnBus(g, b)) ++j;
    REQUIRE(i < gpus.size());
    REQUIRE(j < gpus.size());
    return matrix[i][j];
  };
  // Two NVLink 2.0 links at 25 GB/s each, both ways.
  CHECK(at("02", "03") == 50);
  CHECK(at("03", "02") == 50);
  // One NVLink 1.0 link: 20 GB/s; the inactive links towards 02 count for nothing.
  CHECK(at("04", "05") == 20);
  CHECK(at("04", "02") == 0);
  CHECK(at("05", "02") == 0);
  // The switch-attached GPUs have no direct links.
  CHECK(at("42", "43") == 0);

  // One fabric node for bus 90; six links each: 5.0 on Blackwells is 50 GB/s per link, 5.0 on
  // Hoppers is their NVLink 4 at 25. The link from 02 to the hidden GPU (bus 81) is no switch.
  REQUIRE(g.count(NodeKind::NvSwitch) == 1);
  const int fabric = g.nodesOf(NodeKind::NvSwitch).front();
  auto toFabric = [&](int gpu) {
    double sum = 0;
    for (const Link& l : g.links)
      if (l.kind == LinkKind::NvLink && ((l.a == gpu && l.b == fabric) || (l.b == gpu && l.a == fabric)))
        sum += l.bandwidthGBps;
    return sum;
  };
  CHECK(toFabric(gpuOnBus(g, "42")) == 300);
  CHECK(toFabric(gpuOnBus(g, "43")) == 300);
  CHECK(toFabric(gpuOnBus(g, "44")) == 150);
  CHECK(toFabric(gpuOnBus(g, "45")) == 150);
  CHECK(toFabric(gpuOnBus(g, "02")) == 0);
  // Through the fabric two GPUs get the smaller of their links.
  CHECK(g.nvlinkGBps(gpuOnBus(g, "42"), gpuOnBus(g, "44")) == 150);
  CHECK(g.nvlinkGBps(gpuOnBus(g, "42"), gpuOnBus(g, "43")) == 300);
}
