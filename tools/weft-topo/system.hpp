// weft-topo's system view: the discovered graph as a tree with bandwidths, where each rank
// sits, the ring order and its boundary crossings, the hierarchical levels, and for GPUs the
// chosen rings and trees with their predicted throughput and upper bound. Text or JSON.
#pragma once

#include <string>
#include <vector>

#include "lib/topology/discover.hpp"
#include "lib/topology/placement.hpp"

namespace weft::topo {

struct SystemOptions {
  topology::Source source;
  std::vector<int> gpus;  // cudaN indexes of the ranks' GPUs; empty: every GPU of the host
  int ranks = 0;          // CPU ranks (hosts without GPUs, or --ranks): 0 = one per package core
  topology::MapBy mapBy = topology::MapBy::Core;
  int root = 0;  // broadcast root
  bool json = false;
};

// Throws weft::Error when the source cannot be loaded or the options do not fit the host.
std::string describeSystem(const SystemOptions& options);

}  // namespace weft::topo
