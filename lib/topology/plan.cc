#include "lib/topology/plan.hpp"

#include <fmt/format.h>

#include "lib/base/error.hpp"

namespace weft::topology {
namespace {

CollectivePlan plan(const FlowNetwork& net, PackedCollective c, int root) {
  CollectivePlan p;
  p.collective = c;
  p.root = root;
  p.upperBoundGBps = c == PackedCollective::Broadcast   ? broadcastUpperBound(net, root)
                     : c == PackedCollective::Reduce    ? reduceUpperBound(net, root)
                     : c == PackedCollective::AllGather ? allGatherUpperBound(net)
                                                        : allReduceUpperBound(net);
  p.packed = packTrees(net, c, root);
  p.ring = bestRing(net, c, root);
  p.ringChosen = p.ring.rateGBps >= p.packed.rateGBps;
  return p;
}

const char* name(PackedCollective c) {
  return c == PackedCollective::Broadcast   ? "broadcast"
         : c == PackedCollective::Reduce    ? "reduce"
         : c == PackedCollective::AllGather ? "allgather"
                                            : "allreduce";
}

std::string rankName(const Graph& g, const GpuPlan& p, int rank) {
  return fmt::format("{}({})", rank, g.nodes[p.gpus[rank]].name);
}

std::string treeText(const WeightedTree& t) {
  std::string out;
  for (size_t r = 0; r < t.parent.size(); ++r)
    if (t.parent[r] >= 0) out += fmt::format("{}{}->{}", out.empty() ? "" : " ", t.parent[r], r);
  return out;
}

std::string planText(const CollectivePlan& p) {
  std::string out = fmt::format(
      "{}{}:\n", name(p.collective),
      p.collective == PackedCollective::AllReduce || p.collective == PackedCollective::AllGather
          ? std::string()
          : fmt::format(" {} rank {}", p.collective == PackedCollective::Broadcast ? "from" : "to",
                        p.root));
  out += fmt::format("  upper bound (max flow)  {:8.2f} GB/s\n", p.upperBoundGBps);
  out += fmt::format(
      "  packed trees            {:8.2f} GB/s  {:5.1f}% of the bound, {:.2f}x the "
      "ring, {} trees\n",
      p.packed.rateGBps, 100 * p.packed.rateGBps / p.upperBoundGBps,
      p.packed.rateGBps / p.ring.rateGBps, p.packed.trees.size());
  std::string ring;
  for (int r : p.ring.order) ring += fmt::format("{}{}", ring.empty() ? "" : " ", r);
  out += fmt::format("  best single ring        {:8.2f} GB/s  order {}\n", p.ring.rateGBps, ring);
  out += fmt::format("  chosen                  {}  {:.2f} GB/s\n",
                     p.ringChosen ? "ring" : "packed trees", p.chosenGBps());
  for (const WeightedTree& t : p.packed.trees)
    out += fmt::format("    tree {:5.1f}%  {}\n", 100 * t.weight, treeText(t));
  return out;
}

std::string planJson(const CollectivePlan& p) {
  std::string trees;
  for (const WeightedTree& t : p.packed.trees)
    trees += fmt::format("{}{{\"weight\": {:.6f}, \"parent\": [{}]}}", trees.empty() ? "" : ", ",
                         t.weight, fmt::join(t.parent, ", "));
  return fmt::format(
      "{{\"root\": {}, \"upper_bound_gbps\": {:.4f}, \"packed_gbps\": {:.4f}, "
      "\"ring_gbps\": {:.4f}, \"ring\": [{}], \"chosen\": \"{}\", \"trees\": [{}]}}",
      p.root, p.upperBoundGBps, p.packed.rateGBps, p.ring.rateGBps, fmt::join(p.ring.order, ", "),
      p.ringChosen ? "ring" : "trees", trees);
}

}  // namespace

GpuPlan planGpus(const Graph& graph, std::span<const int> gpus, int root) {
  if (gpus.size() < 2) fail(weftInvalidArgument, "a GPU plan needs at least two GPUs");
  if (root < 0 || root >= static_cast<int>(gpus.size()))
    fail(weftInvalidArgument, "root {} outside the {} GPUs", root, gpus.size());
  const FlowNetwork net = flowNetwork(graph, gpus);
  GpuPlan p;
  p.gpus.assign(gpus.begin(), gpus.end());
  p.broadcast = plan(net, PackedCollective::Broadcast, root);
  p.reduce = plan(net, PackedCollective::Reduce, root);
  p.allreduce = plan(net, PackedCollective::AllReduce, 0);
  p.allgather = plan(net, PackedCollective::AllGather, 0);
  return p;
}

std::vector<int> gpusByIndex(const Graph& graph, std::span<const int> indexes) {
  const std::vector<int> hosts = graph.nodesOf(NodeKind::Host);
  const int host = hosts.empty() ? 0 : graph.nodes[hosts.front()].host;
  if (indexes.empty()) return graph.nodesOf(NodeKind::Gpu, host);
  std::vector<int> out;
  for (int i : indexes) {
    const int g = graph.gpu(host, i);
    if (g < 0) fail(weftInvalidArgument, "the host has no GPU cuda{}", i);
    out.push_back(g);
  }
  return out;
}

WeightedTree chainTree(std::span<const int> order, PackedCollective c) {
  const int n = static_cast<int>(order.size());
  WeightedTree t{std::vector<int>(n, -1), 1};
  for (int i = 1; i < n; ++i)
    t.parent[order[i]] = c == PackedCollective::Reduce ? order[(i + 1) % n] : order[i - 1];
  return t;
}

namespace {

// The cost model's machine and the collective's shape for replaying a plan's schedules.
struct ReplaySetup {
  LinkRoutes routes;
  MachineModel model;
  CollectiveShape shape;
  double moved = 0;  // bytes the collective delivers (allgather: the output)
};

ReplaySetup replaySetup(const Graph& graph, const GpuPlan& plan, const CollectivePlan& p,
                        uint64_t bytes, uint64_t chunkBytes) {
  const FlowNetwork net = flowNetwork(graph, plan.gpus);
  ReplaySetup r;
  r.routes = linkRoutes(net);
  const int n = net.ngpus;
  r.model.nranks = r.model.ranksPerHost = n;
  r.model.intra = {kNvLinkLatencyUs, 0};
  CollectiveShape& shape = r.shape;
  shape.nranks = n;
  shape.elemSize = 4;
  shape.root = p.root;
  shape.chunkBytes = chunkBytes;
  shape.count = bytes / 4 / (p.collective == PackedCollective::AllGather ? n : 1);
  shape.collective = p.collective == PackedCollective::Broadcast   ? Collective::Broadcast
                     : p.collective == PackedCollective::Reduce    ? Collective::Reduce
                     : p.collective == PackedCollective::AllGather ? Collective::AllGather
                                                                   : Collective::AllReduce;
  r.moved =
      static_cast<double>(shape.count) * 4 * (p.collective == PackedCollective::AllGather ? n : 1);
  return r;
}

double replayTrees(ReplaySetup& r, std::span<const WeightedTree> trees) {
  r.model.links = &r.routes;
  return r.moved / 1e9 /
         simulateSchedules([&](const CollectiveShape& s) { return buildPackedTrees(s, trees); },
                           r.shape, r.model)
             .seconds;
}

double replayRing(ReplaySetup& r, const CollectivePlan& p) {
  r.model.links = &r.routes;
  const std::vector<WeightedTree> chain{chainTree(p.ring.order, p.collective)};
  return r.moved / 1e9 /
         simulateSchedules(
             [&](const CollectiveShape& s) {
               if (p.collective == PackedCollective::Broadcast ||
                   p.collective == PackedCollective::Reduce)
                 return buildPackedTrees(s, chain);
               CollectiveShape t = s;
               t.ringOrder = p.ring.order;
               return buildRing(t);
             },
             r.shape, r.model)
             .seconds;
}

}  // namespace

Replayed replayPlan(const Graph& graph, const GpuPlan& plan, const CollectivePlan& p,
                    uint64_t bytes, uint64_t chunkBytes) {
  ReplaySetup setup = replaySetup(graph, plan, p, bytes, chunkBytes);
  return {replayTrees(setup, p.packed.trees), replayRing(setup, p)};
}

Replayed repackByReplay(const Graph& graph, const GpuPlan& plan, CollectivePlan& p, uint64_t bytes,
                        uint64_t chunkBytes) {
  ReplaySetup setup = replaySetup(graph, plan, p, bytes, chunkBytes);
  Replayed r{replayTrees(setup, p.packed.trees), replayRing(setup, p)};
  if (p.collective != PackedCollective::AllReduce) return r;
  const FlowNetwork net = flowNetwork(graph, plan.gpus);
  for (double sharedLoad : kAllReduceSharedLoads) {
    Packing other = packTrees(net, p.collective, p.root, sharedLoad);
    if (other.trees == p.packed.trees) continue;
    const double gbps = replayTrees(setup, other.trees);
    if (gbps > r.packedGBps) {
      r.packedGBps = gbps;
      p.packed = std::move(other);
    }
  }
  p.ringChosen = p.ring.rateGBps >= p.packed.rateGBps;
  return r;
}

double chooseByReplay(CollectivePlan& p, const Replayed& r) {
  p.ringChosen = r.ringGBps >= r.packedGBps;
  return p.ringChosen ? r.ringGBps : r.packedGBps;
}

std::string formatGpuPlan(const Graph& g, const GpuPlan& p) {
  std::string out = "ranks:";
  for (size_t r = 0; r < p.gpus.size(); ++r)
    out += fmt::format(" {}", rankName(g, p, static_cast<int>(r)));
  out += '\n';
  out += planText(p.broadcast);
  out += planText(p.reduce);
  out += planText(p.allreduce);
  out += planText(p.allgather);
  return out;
}

std::string gpuPlanJson(const Graph& g, const GpuPlan& p) {
  std::vector<std::string> names;
  for (int gpu : p.gpus) names.push_back(fmt::format("\"{}\"", g.nodes[gpu].name));
  return fmt::format(
      "{{\"gpus\": [{}], \"broadcast\": {}, \"reduce\": {}, \"allreduce\": {}, "
      "\"allgather\": {}}}",
      fmt::join(names, ", "), planJson(p.broadcast), planJson(p.reduce), planJson(p.allreduce),
      planJson(p.allgather));
}

}  // namespace weft::topology
