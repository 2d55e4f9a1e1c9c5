#include "system.hpp"

#include <fmt/format.h>

#include "lib/base/error.hpp"
#include "lib/topology/plan.hpp"

namespace weft::topo {
namespace {

using namespace weft::topology;

std::string sourceName(const Source& s) {
  if (!s.xmlFile.empty()) return s.xmlFile;
  if (!s.synthetic.empty()) return "synthetic '" + s.synthetic + "'";
  return "this machine";
}

int packageOfNode(const Graph& g, int node) {
  for (int v = node; v >= 0; v = g.nodes[v].parent)
    if (g.nodes[v].kind == NodeKind::Package) return v;
  return -1;
}

std::string placeName(const Graph& g, int node) {
  return node >= 0 ? g.nodes[node].name : "-";
}

}  // namespace

std::string describeSystem(const SystemOptions& o) {
  const Graph g = discover(o.source);
  const int host = g.nodesOf(NodeKind::Host).front();
  const bool gpuRanks = g.count(NodeKind::Gpu) > 0 && o.ranks == 0;
  std::vector<RankPlace> places;
  std::vector<int> gpus;
  if (gpuRanks) {
    gpus = gpusByIndex(g, o.gpus);
    for (int gpu : gpus) {
      RankPlace p;
      p.host = host;
      p.package = p.numa = packageOfNode(g, gpu);
      for (int m : g.nodesOf(NodeKind::Numa))  // the package's (first) NUMA node
        if (g.nodes[m].parent == p.package) {
          p.numa = m;
          break;
        }
      p.gpu = gpu;
      places.push_back(p);
    }
  } else {
    if (!o.gpus.empty()) fail(weftInvalidArgument, "--gpus given for CPU ranks (--ranks)");
    int n = o.ranks;
    if (n == 0)
      for (int pkg : g.nodesOf(NodeKind::Package)) n += static_cast<int>(g.nodes[pkg].cpus.size());
    places = placeRanks(g, n, o.mapBy);
  }
  const std::vector<int> ring = ringOrder(places);
  const int packageCrossings = crossings(places, ring, Level::Package);
  const int numaCrossings = crossings(places, ring, Level::Numa);
  const int hostCrossings = crossings(places, ring, Level::Host);
  const std::vector<int> packageGroups = groupsAt(places, Level::Package);
  GpuPlan plan;
  const bool planned = gpuRanks && gpus.size() >= 2;
  if (planned) plan = planGpus(g, gpus, o.root);

  if (o.json) {
    std::string ranks;
    for (size_t r = 0; r < places.size(); ++r)
      ranks += fmt::format(
          "{}{{\"rank\": {}, \"package\": {}, \"numa\": {}, \"cpu\": {}, "
          "\"gpu\": {}}}",
          r ? ", " : "", r, places[r].package, places[r].numa, places[r].cpu, places[r].gpu);
    return fmt::format(
        "{{\"source\": \"{}\", \"graph\": {},\n\"ranks\": [{}],\n\"ring\": [{}], "
        "\"crossings\": {{\"package\": {}, \"numa\": {}, \"host\": {}}}, "
        "\"package_groups\": [{}],\n\"gpu_plan\": {}}}\n",
        sourceName(o.source), formatJson(g), ranks, fmt::join(ring, ", "), packageCrossings,
        numaCrossings, hostCrossings, fmt::join(packageGroups, ", "),
        planned ? gpuPlanJson(g, plan) : "null");
  }
  std::string out = fmt::format("system: {}\n", sourceName(o.source));
  out += formatTree(g);
  out += fmt::format("\nranks ({}):\n", places.size());
  for (size_t r = 0; r < places.size(); ++r) {
    const RankPlace& p = places[r];
    out += fmt::format("  rank {:3}: {} / {}", r, placeName(g, p.package), placeName(g, p.numa));
    if (p.cpu >= 0) out += fmt::format(" / cpu {}", p.cpu);
    if (p.gpu >= 0) out += fmt::format(" / {}", placeName(g, p.gpu));
    const int nic = nearestNic(g, p.gpu >= 0 ? p.gpu : p.numa >= 0 ? p.numa : p.package);
    if (nic >= 0) out += fmt::format("  (nearest NIC {})", placeName(g, nic));
    out += '\n';
  }
  out += fmt::format("ring order: {}\n", fmt::join(ring, " "));
  out += fmt::format("ring crossings: packages {}, NUMA nodes {}, hosts {}\n", packageCrossings,
                     numaCrossings, hostCrossings);
  out += fmt::format("levels: package group of each rank [{}]\n", fmt::join(packageGroups, " "));
  if (planned) out += fmt::format("\n{}", formatGpuPlan(g, plan));
  return out;
}

}  // namespace weft::topo
