// Discovery: the graph of one host from hwloc, on the live machine or from a description.
#pragma once

#include <string>

#include "lib/topology/graph.hpp"

namespace weft::topology {

// Where the picture comes from: an hwloc XML file (format 2.0), an hwloc synthetic description
// ("pack:2 numa:1 core:8 pu:1"), or (both empty) the live machine.
struct Source {
  std::string xmlFile;
  std::string synthetic;
};

// WEFT_TOPO_FILE, else WEFT_TOPO_SYNTHETIC, else the live machine.
Source sourceFromEnv();

// Loads the source with hwloc, I/O objects kept, and builds the host's graph: packages, NUMA
// nodes, PCIe switches, GPUs (PCI class 03xx), NICs (02xx), NVSwitches (NVIDIA 0680), NVLink
// from the NVLinkBandwidth distances (or, on the live machine without them, from NVML when its
// library can be loaded). Throws Error (weftInvalidArgument) naming the source when hwloc
// cannot load it or the NVLink matrix names something that is not a GPU.
Graph discover(const Source& source);

// The first CPU this process is bound to, or -1 when it may run on every CPU (unbound).
int currentCpu();

}  // namespace weft::topology
