// The system picture weft decides from: one graph of hosts, packages, NUMA nodes, PCIe
// switches, GPUs, NICs and NVSwitches, with the links between them (bandwidth per direction and
// latency). discover.hpp fills it from hwloc; placement.hpp and packing.hpp read it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weft::topology {

enum class NodeKind : uint8_t { Host, Package, Numa, PciSwitch, Gpu, Nic, NvSwitch };
const char* nodeKindName(NodeKind kind) noexcept;

enum class LinkKind : uint8_t {
  Memory,        // package to its NUMA node
  Interconnect,  // package to package in one host (UPI/QPI/Infinity Fabric)
  Pcie,          // package or switch to switch, GPU or NIC
  NvLink,        // GPU to GPU, or GPU to the NVSwitch fabric
  Network,       // host to host, through NICs
};
const char* linkKindName(LinkKind kind) noexcept;

struct Node {
  NodeKind kind = NodeKind::Host;
  int host = 0;           // index of the host this node belongs to
  int parent = -1;        // the node above it in the tree (-1 for hosts)
  int index = 0;          // per kind within its host: package 1, GPU 3 (cuda3), NIC 0 (mlx5_0)
  std::string name;       // "Package 1", "cuda3", "mlx5_0", the host name for hosts
  std::string busId;      // PCI devices: "0000:05:00.0"
  std::vector<int> cpus;  // packages and NUMA nodes: their PUs (OS indexes)
};

struct Link {
  int a = 0, b = 0;  // node indexes; the link carries bandwidthGBps in each direction
  LinkKind kind = LinkKind::Pcie;
  double bandwidthGBps = 0;
  double latencyUs = 0;
};

// Bandwidths and latencies that hwloc does not give (per direction).
inline constexpr double kInterconnectGBps = 20;  // between packages (a QPI/UPI link, roughly)
inline constexpr double kMemoryGBps = 40;
inline constexpr double kNetworkGBps = 12.5;  // 100 Gb/s NICs
inline constexpr double kPcieLatencyUs = 0.5, kNvLinkLatencyUs = 0.3, kInterconnectLatencyUs = 0.2,
                        kNetworkLatencyUs = 2;

struct Graph {
  std::vector<Node> nodes;
  std::vector<Link> links;

  int add(Node node);
  void link(int a, int b, LinkKind kind, double gbps, double latencyUs);
  // Indexes of the nodes of `kind` (in `host`, or every host when host < 0), in node order.
  std::vector<int> nodesOf(NodeKind kind, int host = -1) const;
  int count(NodeKind kind, int host = -1) const {
    return static_cast<int>(nodesOf(kind, host).size());
  }
  // The GPU node of cuda`index` on `host`, or -1.
  int gpu(int host, int index) const;
  // NVLink bandwidth between two GPU nodes (a direct link, or through the NVSwitch fabric: the
  // smaller of the two GPUs' fabric links); 0 when they have none.
  double nvlinkGBps(int a, int b) const;
  // Appends `other`'s hosts (every node and link) to this graph.
  void append(const Graph& other);
};

// The graph as an indented tree (hosts, packages, switches, devices) with each node's link to
// its parent, then the links that are not tree edges (NVLink, interconnect, network).
std::string formatTree(const Graph& graph);
// The same as a JSON object {"nodes": [...], "links": [...]}.
std::string formatJson(const Graph& graph);

}  // namespace weft::topology
