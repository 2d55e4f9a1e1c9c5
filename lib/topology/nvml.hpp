// NVLink from NVML, for live machines whose hwloc has no NVML plugin (Debian's has none).
// libnvidia-ml.so.1 is loaded at run time with dlopen: weft has no link-time dependency on it,
// and a machine without it simply has no NVLink in its picture.
#pragma once

#include <vector>

#include "lib/topology/graph.hpp"

namespace weft::topology {

// Fills `gpus` (GPU nodes of `graph`, matched to NVML devices by PCI bus id) and `matrix`
// (GB/s per direction between them, counting active links); links to NVSwitches add an
// "NVSwitch fabric" node to the graph, linked to each GPU at its switch bandwidth. Leaves
// everything empty when NVML is absent or fails (logged at INFO).
void nvmlNvLinks(Graph& graph, std::vector<int>& gpus, std::vector<std::vector<double>>& matrix);

}  // namespace weft::topology
