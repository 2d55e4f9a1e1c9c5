// Discovery from the hwloc XML fixtures: what each file must yield (counts of packages, NUMA
// nodes, GPUs, NICs, PCIe switches, and the NVLink matrix, written out here from the machines'
// published layouts), and clear errors for files hwloc cannot load or that name something odd.
#include <catch2/catch.hpp>

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include "fixture.hpp"
#include "lib/base/error.hpp"

using namespace weft;
using namespace weft::topology;
using weft::testing::fixture;
using weft::testing::fixturePath;

namespace {

// NVLink bandwidth between cudaI and cudaJ, GB/s.
double nvlink(const Graph& g, int i, int j) {
  return g.nvlinkGBps(g.gpu(0, i), g.gpu(0, j));
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A temporary file holding `text`, removed at scope exit.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/weft-topo-test-XXXXXX";
    const int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    close(fd);
    path = name;
    std::ofstream(path) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
};

std::string errorOf(const Source& s) {
  try {
    discover(s);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the two-package fixture has two packages of eight CPUs and no I/O") {
  const Graph& g = fixture("two-package.xml");
  CHECK(g.count(NodeKind::Host) == 1);
  CHECK(g.count(NodeKind::Package) == 2);
  CHECK(g.count(NodeKind::Numa) == 2);
  CHECK(g.count(NodeKind::Gpu) == 0);
  CHECK(g.count(NodeKind::Nic) == 0);
  const std::vector<int> p = g.nodesOf(NodeKind::Package);
  CHECK(g.nodes[p[0]].cpus == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(g.nodes[p[1]].cpus == std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15});
}

TEST_CASE(
    "the DGX-1 fixture has 8 GPUs in pairs behind 4 switches, 4 NICs and the cube-mesh NVLink") {
  const Graph& g = fixture("dgx1-v100.xml");
  CHECK(g.count(NodeKind::Package) == 2);
  CHECK(g.count(NodeKind::Gpu) == 8);
  CHECK(g.count(NodeKind::Nic) == 4);
  CHECK(g.count(NodeKind::PciSwitch) == 4);
  CHECK(g.count(NodeKind::NvSwitch) == 0);
  // DGX-1V's nvidia-smi topo -m: NV1 = one link (25 GB/s per direction), NV2 = two.
  const int links[8][8] = {{0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0},
                           {1, 2, 0, 2, 0, 0, 1, 0}, {2, 1, 2, 0, 0, 0, 0, 1},
                           {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1},
                           {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0}};
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j)
      if (i != j) {
        INFO("cuda" << i << " - cuda" << j);
        CHECK(nvlink(g, i, j) == Approx(25.0 * links[i][j]));
      }
  // GPUs 2k and 2k+1 and NIC mlx5_k share switch k; switches 0, 1 hang from package 0.
  for (int k = 0; k < 4; ++k) {
    const int sw = g.nodes[g.gpu(0, 2 * k)].parent;
    CHECK(g.nodes[sw].kind == NodeKind::PciSwitch);
    CHECK(g.nodes[g.gpu(0, 2 * k + 1)].parent == sw);
    int nicsHere = 0;
    for (int nic : g.nodesOf(NodeKind::Nic))
      if (g.nodes[nic].parent == sw) {
        ++nicsHere;
        CHECK(g.nodes[nic].name == "mlx5_" + std::to_string(k));
      }
    CHECK(nicsHere == 1);
    CHECK(g.nodes[g.nodes[sw].parent].name == (k < 2 ? "Package 0" : "Package 1"));
  }
}

TEST_CASE("the NVSwitch fixture joins all 8 GPUs through one fabric at 300 GB/s") {
  const Graph& g = fixture("nvswitch-a100.xml");
  CHECK(g.count(NodeKind::Gpu) == 8);
  CHECK(g.count(NodeKind::Nic) == 4);
  REQUIRE(g.count(NodeKind::NvSwitch) == 1);
  int toFabric = 0, direct = 0;
  for (const Link& l : g.links) {
    if (l.kind != LinkKind::NvLink) continue;
    const bool fabric =
        g.nodes[l.a].kind == NodeKind::NvSwitch || g.nodes[l.b].kind == NodeKind::NvSwitch;
    (fabric ? toFabric : direct) += 1;
  }
  CHECK(toFabric == 8);
  CHECK(direct == 0);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j)
      if (i != j) CHECK(nvlink(g, i, j) == Approx(300));
}

TEST_CASE("the PCIe-only fixture has two switches of four GPUs and no NVLink") {
  const Graph& g = fixture("pcie-8gpu.xml");
  CHECK(g.count(NodeKind::Gpu) == 8);
  CHECK(g.count(NodeKind::Nic) == 1);
  CHECK(g.count(NodeKind::PciSwitch) == 2);
  for (const Link& l : g.links) CHECK(l.kind != LinkKind::NvLink);
  for (int i = 0; i < 8; ++i)
    CHECK(g.nodes[g.gpu(0, i)].parent == g.nodes[g.gpu(0, i < 4 ? 0 : 4)].parent);
}

TEST_CASE("a synthetic description gives its packages and CPUs") {
  const Graph g = discover({"", "pack:2 numa:1 core:4 pu:1"});
  CHECK(g.count(NodeKind::Package) == 2);
  CHECK(g.count(NodeKind::Numa) == 2);
  CHECK(g.nodes[g.nodesOf(NodeKind::Host)[0]].cpus.size() == 8);
}

TEST_CASE(
    "broken topology files are rejected with an error naming the file and what was expected") {
  SECTION("truncated XML") {
    const std::string what = errorOf({fixturePath("broken-truncated.xml"), ""});
    CHECK_THAT(what, Catch::Contains("broken-truncated.xml"));
    CHECK_THAT(what, Catch::Contains("format 2.0"));
  }
  SECTION("a file that crashes hwloc's own importer (hwloc-ls segfaults on it)") {
    const std::string what = errorOf({fixturePath("hwloc-crash.xml"), ""});
    CHECK_THAT(what, Catch::Contains("hwloc-crash.xml"));
    CHECK_THAT(what, Catch::Contains("crashed"));
  }
  SECTION("a file that does not exist") {
    const std::string what = errorOf({"/nonexistent/topo.xml", ""});
    CHECK_THAT(what, Catch::Contains("/nonexistent/topo.xml"));
    CHECK_THAT(what, Catch::Contains("cannot read"));
  }
  SECTION("not XML at all") {
    TempFile f("this is not a topology\n");
    CHECK_THAT(errorOf({f.path, ""}), Catch::Contains("format 2.0"));
  }
  SECTION("an NVLink matrix naming a NIC") {
    // Point the matrix's first entry at mlx5_0's OS device instead of nvml0's.
    std::string text = readFile(fixturePath("dgx1-v100.xml"));
    std::smatch m;
    REQUIRE(std::regex_search(text, m, std::regex(R"re(gp_index="(\d+)" name="mlx5_0")re")));
    const std::string nic = m[1];
    REQUIRE(std::regex_search(text, m,
                              std::regex(R"re(<indexes length="\d+">(\d+) ([^<]*)</indexes>)re")));
    const std::string indexes = nic + " " + m[2].str();
    text.replace(
        m.position(0), m.length(0),
        "<indexes length=\"" + std::to_string(indexes.size()) + "\">" + indexes + "</indexes>");
    TempFile f(text);
    const std::string what = errorOf({f.path, ""});
    CHECK_THAT(what, Catch::Contains("mlx5_0"));
    CHECK_THAT(what, Catch::Contains("not an OS device of a GPU"));
  }
  SECTION("a bad synthetic description") {
    CHECK_THAT(errorOf({"", "pack:two"}), Catch::Contains("pack:two"));
  }
}

TEST_CASE("this machine is discovered with hwloc: every CPU this process may use is in a package") {
  const Graph g = discover({});
  REQUIRE(g.count(NodeKind::Host) == 1);
  REQUIRE(g.count(NodeKind::Package) >= 1);
  std::vector<int> inPackages;
  for (int p : g.nodesOf(NodeKind::Package))
    inPackages.insert(inPackages.end(), g.nodes[p].cpus.begin(), g.nodes[p].cpus.end());
  std::sort(inPackages.begin(), inPackages.end());
  cpu_set_t allowed;
  REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) {
      INFO("CPU " << c);
      CHECK(std::binary_search(inPackages.begin(), inPackages.end(), c));
    }
}
