// Where ranks sit in the system picture, and the orders and levels that follow from it: a ring
// that visits each package's ranks (each host's, each NUMA node's) contiguously, so it crosses
// every boundary the fewest times, and the groups hierarchical algorithms work in.
#pragma once

#include <span>
#include <vector>

#include "lib/topology/graph.hpp"

namespace weft::topology {

// One rank's place: graph nodes of its host, package and NUMA node, its CPU (OS index, -1 when
// unknown) and its GPU node (-1 for CPU ranks).
struct RankPlace {
  int host = -1, package = -1, numa = -1;
  int cpu = -1;
  int gpu = -1;
};

// The place of a process on host node `host` running on `cpu`.
RankPlace placeOfCpu(const Graph& graph, int host, int cpu);

// The NIC closest to `node` (a GPU, switch, NUMA node or package) in the PCIe tree: the first
// NIC below the nearest ancestor that has one; -1 when its host has none. Ties go to the NIC
// found first (lowest node index).
int nearestNic(const Graph& graph, int node);

// How a launcher spread ranks over the cores of one host: by core (fill package 0, then 1,
// ...) or by package (round robin over packages, as `mpirun --map-by package` does).
enum class MapBy { Core, Package };
// n ranks on the first host of `graph`. Throws Error (weftInvalidArgument) when there are more
// ranks than CPUs.
std::vector<RankPlace> placeRanks(const Graph& graph, int n, MapBy by);

// The ring order: ranks sorted by (host, package, NUMA node, GPU's PCIe position, CPU, rank),
// so each host's, package's and NUMA node's ranks are contiguous.
std::vector<int> ringOrder(std::span<const RankPlace> places);

enum class Level { Host, Package, Numa };
// How many consecutive pairs of the ring (including last -> first) differ at `level`.
int crossings(std::span<const RankPlace> places, std::span<const int> order, Level level);

// The groups of hierarchical algorithms: for each rank, the index of its group at `level`
// (groups numbered in order of their first rank).
std::vector<int> groupsAt(std::span<const RankPlace> places, Level level);

}  // namespace weft::topology
