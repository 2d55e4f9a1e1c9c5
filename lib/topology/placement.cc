#include "lib/topology/placement.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

#include "lib/base/error.hpp"

namespace weft::topology {
namespace {

bool holds(const Node& n, int cpu) {
  return std::binary_search(n.cpus.begin(), n.cpus.end(), cpu);
}

int at(const RankPlace& p, Level level) {
  switch (level) {
    case Level::Host: return p.host;
    case Level::Package: return p.package;
    case Level::Numa: return p.numa;
  }
  return -1;
}

}  // namespace

RankPlace placeOfCpu(const Graph& g, int host, int cpu) {
  RankPlace p;
  p.host = host;
  p.cpu = cpu;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.host != g.nodes[host].host || !holds(n, cpu)) continue;
    if (n.kind == NodeKind::Package) p.package = static_cast<int>(i);
    if (n.kind == NodeKind::Numa) p.numa = static_cast<int>(i);
  }
  // A CPU hwloc does not know (or none): the host's first package stands for it.
  const std::vector<int> packages = g.nodesOf(NodeKind::Package, g.nodes[host].host);
  if (p.package < 0 && !packages.empty()) p.package = packages.front();
  if (p.numa < 0) p.numa = p.package;
  return p;
}

int nearestNic(const Graph& g, int node) {
  const std::vector<int> nics = g.nodesOf(NodeKind::Nic, g.nodes[node].host);
  auto below = [&](int nic, int ancestor) {
    for (int v = nic; v >= 0; v = g.nodes[v].parent)
      if (v == ancestor) return true;
    return false;
  };
  for (int a = node; a >= 0; a = g.nodes[a].parent)
    for (int nic : nics)
      if (below(nic, a)) return nic;
  return -1;
}

std::vector<RankPlace> placeRanks(const Graph& g, int n, MapBy by) {
  const std::vector<int> hosts = g.nodesOf(NodeKind::Host);
  if (hosts.empty()) fail(weftInvalidArgument, "the picture has no host");
  std::vector<std::vector<int>> perPackage;  // CPUs of each package of the first host
  size_t total = 0;
  for (int pkg : g.nodesOf(NodeKind::Package, g.nodes[hosts[0]].host)) {
    perPackage.push_back(g.nodes[pkg].cpus);
    total += g.nodes[pkg].cpus.size();
  }
  if (static_cast<size_t>(n) > total)
    fail(weftInvalidArgument, "{} ranks do not fit the host's {} CPUs", n, total);
  std::vector<int> cpus;
  if (by == MapBy::Core) {
    for (const auto& p : perPackage) cpus.insert(cpus.end(), p.begin(), p.end());
  } else {
    for (size_t k = 0; cpus.size() < total; ++k)
      for (const auto& p : perPackage)
        if (k < p.size()) cpus.push_back(p[k]);
  }
  std::vector<RankPlace> places;
  for (int r = 0; r < n; ++r) places.push_back(placeOfCpu(g, hosts[0], cpus[r]));
  return places;
}

std::vector<int> ringOrder(std::span<const RankPlace> places) {
  std::vector<int> order(places.size());
  std::iota(order.begin(), order.end(), 0);
  auto key = [&](int r) {
    const RankPlace& p = places[r];
    return std::make_tuple(p.host, p.package, p.numa, p.gpu, p.cpu, r);
  };
  std::sort(order.begin(), order.end(), [&](int a, int b) { return key(a) < key(b); });
  return order;
}

int crossings(std::span<const RankPlace> places, std::span<const int> order, Level level) {
  const size_t n = order.size();
  if (n < 2) return 0;
  int count = 0;
  for (size_t i = 0; i < n; ++i)
    count += at(places[order[i]], level) != at(places[order[(i + 1) % n]], level);
  return count;
}

std::vector<int> groupsAt(std::span<const RankPlace> places, Level level) {
  std::map<int, int> index;
  std::vector<int> groups;
  for (const RankPlace& p : places) {
    auto [it, added] = index.emplace(at(p, level), static_cast<int>(index.size()));
    groups.push_back(it->second);
  }
  return groups;
}

}  // namespace weft::topology
