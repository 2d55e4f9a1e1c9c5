#include "lib/topology/graph.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace weft::topology {

const char* nodeKindName(NodeKind kind) noexcept {
  switch (kind) {
    case NodeKind::Host: return "host";
    case NodeKind::Package: return "package";
    case NodeKind::Numa: return "numa";
    case NodeKind::PciSwitch: return "pci-switch";
    case NodeKind::Gpu: return "gpu";
    case NodeKind::Nic: return "nic";
    case NodeKind::NvSwitch: return "nvswitch";
  }
  return "?";
}

const char* linkKindName(LinkKind kind) noexcept {
  switch (kind) {
    case LinkKind::Memory: return "memory";
    case LinkKind::Interconnect: return "interconnect";
    case LinkKind::Pcie: return "pcie";
    case LinkKind::NvLink: return "nvlink";
    case LinkKind::Network: return "network";
  }
  return "?";
}

int Graph::add(Node node) {
  nodes.push_back(std::move(node));
  return static_cast<int>(nodes.size()) - 1;
}

void Graph::link(int a, int b, LinkKind kind, double gbps, double latencyUs) {
  links.push_back({a, b, kind, gbps, latencyUs});
}

std::vector<int> Graph::nodesOf(NodeKind kind, int host) const {
  std::vector<int> out;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].kind == kind && (host < 0 || nodes[i].host == host))
      out.push_back(static_cast<int>(i));
  return out;
}

int Graph::gpu(int host, int index) const {
  for (int g : nodesOf(NodeKind::Gpu, host))
    if (nodes[g].index == index) return g;
  return -1;
}

double Graph::nvlinkGBps(int a, int b) const {
  double direct = 0, fabricA = 0, fabricB = 0;
  for (const Link& l : links) {
    if (l.kind != LinkKind::NvLink) continue;
    if ((l.a == a && l.b == b) || (l.a == b && l.b == a)) direct += l.bandwidthGBps;
    const int other = l.a == a || l.a == b ? l.b : l.a;
    if (nodes[other].kind != NodeKind::NvSwitch) continue;
    if (l.a == a || l.b == a) fabricA += l.bandwidthGBps;
    if (l.a == b || l.b == b) fabricB += l.bandwidthGBps;
  }
  return direct + std::min(fabricA, fabricB);
}

void Graph::append(const Graph& other) {
  const int nodeBase = static_cast<int>(nodes.size());
  int hostBase = 0;
  for (const Node& n : nodes) hostBase = std::max(hostBase, n.host + 1);
  for (Node n : other.nodes) {
    n.host += hostBase;
    if (n.parent >= 0) n.parent += nodeBase;
    nodes.push_back(std::move(n));
  }
  for (Link l : other.links) {
    l.a += nodeBase;
    l.b += nodeBase;
    links.push_back(l);
  }
}

namespace {

// The link between a node and its parent, if any.
const Link* parentLink(const Graph& g, int node) {
  const int p = g.nodes[node].parent;
  for (const Link& l : g.links)
    if ((l.a == p && l.b == node) || (l.a == node && l.b == p)) return &l;
  return nullptr;
}

void printSubtree(const Graph& g, int node, int depth, std::string& out) {
  const Node& n = g.nodes[node];
  out += fmt::format("{:{}}{} {}", "", 2 * depth, nodeKindName(n.kind), n.name);
  if (!n.busId.empty()) out += fmt::format(" ({})", n.busId);
  if (!n.cpus.empty()) out += fmt::format(" cpus {}-{}", n.cpus.front(), n.cpus.back());
  if (const Link* l = n.parent >= 0 ? parentLink(g, node) : nullptr)
    out += fmt::format("  [{} {:g} GB/s, {:g} us]", linkKindName(l->kind), l->bandwidthGBps,
                       l->latencyUs);
  out += '\n';
  for (size_t c = 0; c < g.nodes.size(); ++c)
    if (g.nodes[c].parent == node) printSubtree(g, static_cast<int>(c), depth + 1, out);
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + '"';
}

}  // namespace

std::string formatTree(const Graph& g) {
  std::string out;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].parent < 0) printSubtree(g, static_cast<int>(i), 0, out);
  bool header = false;
  for (const Link& l : g.links) {
    if (g.nodes[l.a].parent == l.b || g.nodes[l.b].parent == l.a) continue;
    if (!header) out += "links outside the tree:\n";
    header = true;
    out += fmt::format("  {} {} -- {} {}: {} {:g} GB/s, {:g} us\n", nodeKindName(g.nodes[l.a].kind),
                       g.nodes[l.a].name, nodeKindName(g.nodes[l.b].kind), g.nodes[l.b].name,
                       linkKindName(l.kind), l.bandwidthGBps, l.latencyUs);
  }
  return out;
}

std::string formatJson(const Graph& g) {
  std::string out = "{\"nodes\": [";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    out += fmt::format(
        "{}\n  {{\"id\": {}, \"kind\": \"{}\", \"name\": {}, \"host\": {}, "
        "\"parent\": {}, \"index\": {}",
        i ? "," : "", i, nodeKindName(n.kind), jsonString(n.name), n.host, n.parent, n.index);
    if (!n.busId.empty()) out += fmt::format(", \"bus_id\": {}", jsonString(n.busId));
    if (!n.cpus.empty()) out += fmt::format(", \"cpus\": [{}]", fmt::join(n.cpus, ", "));
    out += "}";
  }
  out += "],\n\"links\": [";
  for (size_t i = 0; i < g.links.size(); ++i) {
    const Link& l = g.links[i];
    out += fmt::format(
        "{}\n  {{\"a\": {}, \"b\": {}, \"kind\": \"{}\", \"bandwidth_gbps\": {:g}, "
        "\"latency_us\": {:g}}}",
        i ? "," : "", l.a, l.b, linkKindName(l.kind), l.bandwidthGBps, l.latencyUs);
  }
  return out + "]}";
}

}  // namespace weft::topology
