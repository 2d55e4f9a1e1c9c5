#include "lib/topology/packing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <queue>

#include "lib/base/error.hpp"
#include "lib/topology/simplex.hpp"

namespace weft::topology {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool forwards(const Graph& g, int node) {
  const NodeKind k = g.nodes[node].kind;
  return k == NodeKind::Package || k == NodeKind::PciSwitch || k == NodeKind::NvSwitch;
}

// Shortest path (by `length` per arc) from GPU vertex a to GPU vertex b through non-GPU
// vertices only; the arcs in order, empty when there is none.
std::vector<int> shortestPath(const FlowNetwork& net, const std::vector<std::vector<int>>& out,
                              const std::vector<double>& length, int a, int b) {
  const int n = net.vertices();
  std::vector<double> dist(n, kInf);
  std::vector<int> via(n, -1);
  using Item = std::pair<double, int>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> queue;
  dist[a] = 0;
  queue.push({0, a});
  while (!queue.empty()) {
    auto [d, v] = queue.top();
    queue.pop();
    if (d > dist[v]) continue;
    if (v == b) break;
    if (v != a && v < net.ngpus) continue;  // GPUs do not forward inside a path
    for (int arc : out[v]) {
      const int w = net.arcs[arc].to;
      const double nd = d + length[arc];
      if (nd < dist[w]) {
        dist[w] = nd;
        via[w] = arc;
        queue.push({nd, w});
      }
    }
  }
  std::vector<int> path;
  if (dist[b] == kInf) return path;
  for (int v = b; v != a; v = net.arcs[via[v]].from) path.push_back(via[v]);
  std::reverse(path.begin(), path.end());
  return path;
}

struct Paths {
  // arcs[a][b]: the path from GPU a to GPU b; cost[a][b] its length.
  std::vector<std::vector<std::vector<int>>> arcs;
  std::vector<std::vector<double>> cost;
};

Paths allPaths(const FlowNetwork& net, const std::vector<std::vector<int>>& out,
               const std::vector<double>& length) {
  const int n = net.ngpus;
  Paths p{std::vector(n, std::vector<std::vector<int>>(n)), std::vector(n, std::vector(n, kInf))};
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      p.arcs[a][b] = shortestPath(net, out, length, a, b);
      if (!p.arcs[a][b].empty()) {
        p.cost[a][b] = 0;
        for (int arc : p.arcs[a][b]) p.cost[a][b] += length[arc];
      }
    }
  return p;
}

std::vector<std::vector<int>> outArcs(const FlowNetwork& net) {
  std::vector<std::vector<int>> out(net.vertices());
  for (size_t i = 0; i < net.arcs.size(); ++i) out[net.arcs[i].from].push_back(static_cast<int>(i));
  return out;
}

struct Edge {
  int u, v;
  double w;
  int id;
};

// Edmonds' minimum arborescence rooted at `root` over nodes 0..n-1 (every node reachable):
// indexes into `edges` of the chosen edges.
std::vector<int> minArborescence(int n, int root, const std::vector<Edge>& edges) {
  std::vector<double> minIn(n, kInf);
  std::vector<int> minEdge(n, -1);
  for (size_t i = 0; i < edges.size(); ++i) {
    const Edge& e = edges[i];
    if (e.u != e.v && e.v != root && e.w < minIn[e.v]) {
      minIn[e.v] = e.w;
      minEdge[e.v] = static_cast<int>(i);
    }
  }
  for (int v = 0; v < n; ++v)
    if (v != root && minEdge[v] < 0)
      fail(weftInternalError, "arborescence: node {} unreachable", v);
  std::vector<int> comp(n, -1), seen(n, -1);
  std::vector<bool> inCycle(n, false);
  int count = 0;
  for (int v = 0; v < n; ++v) {
    int x = v;
    while (x != root && seen[x] == -1 && comp[x] == -1) {
      seen[x] = v;
      x = edges[minEdge[x]].u;
    }
    if (x != root && comp[x] == -1 && seen[x] == v) {
      int y = x;
      do {
        comp[y] = count;
        inCycle[y] = true;
        y = edges[minEdge[y]].u;
      } while (y != x);
      ++count;
    }
  }
  std::vector<int> chosen;
  if (count == 0) {
    for (int v = 0; v < n; ++v)
      if (v != root) chosen.push_back(minEdge[v]);
    return chosen;
  }
  for (int v = 0; v < n; ++v)
    if (comp[v] == -1) comp[v] = count++;
  std::vector<Edge> contracted;
  for (size_t i = 0; i < edges.size(); ++i) {
    const Edge& e = edges[i];
    if (comp[e.u] == comp[e.v]) continue;
    contracted.push_back(
        {comp[e.u], comp[e.v], e.w - (inCycle[e.v] ? minIn[e.v] : 0), static_cast<int>(i)});
  }
  std::vector<bool> entered(n, false);
  for (int k : minArborescence(count, comp[root], contracted)) {
    const int i = contracted[k].id;
    chosen.push_back(i);
    entered[edges[i].v] = true;
  }
  for (int v = 0; v < n; ++v)
    if (inCycle[v] && !entered[v]) chosen.push_back(minEdge[v]);
  return chosen;
}

// Whether data flows from parent to child (down) and from child to parent (up).
bool down(PackedCollective c) {
  return c != PackedCollective::Reduce;
}
bool up(PackedCollective c) {
  return c == PackedCollective::Reduce || c == PackedCollective::AllReduce;
}

int rootOf(const std::vector<int>& parent) {
  return static_cast<int>(std::find(parent.begin(), parent.end(), -1) - parent.begin());
}

// Load per arc of one unit of data through a tree (parent[] over GPUs).
std::vector<double> treeLoad(const FlowNetwork& net, const Paths& paths, PackedCollective c,
                             const std::vector<int>& parent) {
  std::vector<double> load(net.arcs.size(), 0);
  for (int v = 0; v < net.ngpus; ++v) {
    const int p = parent[v];
    if (p < 0) continue;
    if (down(c))
      for (int arc : paths.arcs[p][v]) load[arc] += 1;
    if (up(c))
      for (int arc : paths.arcs[v][p]) load[arc] += 1;
  }
  return load;
}

double rateOfLoad(const FlowNetwork& net, const std::vector<double>& load) {
  double worst = 0;  // seconds per GB
  for (size_t e = 0; e < net.arcs.size(); ++e)
    worst = std::max(worst, load[e] / net.arcs[e].capacity);
  return worst > 0 ? 1 / worst : kInf;
}

// The paths schedules use, fixed: fewest seconds per byte on an idle network (1/capacity per
// arc), so a direct NVLink wins over a PCIe detour.
Paths idlePaths(const FlowNetwork& net) {
  std::vector<double> length(net.arcs.size());
  for (size_t e = 0; e < net.arcs.size(); ++e) length[e] = 1 / net.arcs[e].capacity;
  return allPaths(net, outArcs(net), length);
}

// The arcs that messages of more than one connection (ordered GPU pair) of these trees cross.
std::vector<bool> sharedArcs(const FlowNetwork& net, const Paths& paths, PackedCollective c,
                             const std::vector<std::vector<int>>& trees) {
  std::vector<std::vector<bool>> used(net.ngpus, std::vector<bool>(net.ngpus, false));
  for (const std::vector<int>& parent : trees)
    for (int v = 0; v < net.ngpus; ++v) {
      if (parent[v] < 0) continue;
      if (down(c)) used[parent[v]][v] = true;
      if (up(c)) used[v][parent[v]] = true;
    }
  std::vector<int> connections(net.arcs.size(), 0);
  for (int a = 0; a < net.ngpus; ++a)
    for (int b = 0; b < net.ngpus; ++b)
      if (used[a][b])
        for (int arc : paths.arcs[a][b]) ++connections[arc];
  std::vector<bool> shared(net.arcs.size());
  for (size_t e = 0; e < shared.size(); ++e) shared[e] = connections[e] > 1;
  return shared;
}

}  // namespace

FlowNetwork flowNetwork(const Graph& g, std::span<const int> gpus) {
  FlowNetwork net;
  std::vector<int> vertex(g.nodes.size(), -1);
  for (int gpu : gpus) {
    if (gpu < 0 || gpu >= static_cast<int>(g.nodes.size()) || g.nodes[gpu].kind != NodeKind::Gpu)
      fail(weftInvalidArgument, "node {} is not a GPU", gpu);
    if (g.nodes[gpu].host != g.nodes[gpus[0]].host)
      fail(weftInvalidArgument, "GPUs {} and {} are on different hosts", g.nodes[gpus[0]].name,
           g.nodes[gpu].name);
    if (vertex[gpu] >= 0) fail(weftInvalidArgument, "GPU {} given twice", g.nodes[gpu].name);
    vertex[gpu] = static_cast<int>(net.node.size());
    net.node.push_back(gpu);
  }
  net.ngpus = static_cast<int>(gpus.size());
  const int host = gpus.empty() ? 0 : g.nodes[gpus[0]].host;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].host == host && forwards(g, static_cast<int>(i))) {
      vertex[i] = static_cast<int>(net.node.size());
      net.node.push_back(static_cast<int>(i));
    }
  for (const Link& l : g.links) {
    const int a = vertex[l.a], b = vertex[l.b];
    if (a < 0 || b < 0 || l.bandwidthGBps <= 0) continue;
    // An NVSwitch's PCIe function is for management: data reaches the fabric over NVLink only.
    if (l.kind == LinkKind::Pcie &&
        (g.nodes[l.a].kind == NodeKind::NvSwitch || g.nodes[l.b].kind == NodeKind::NvSwitch))
      continue;
    net.arcs.push_back({a, b, l.bandwidthGBps});
    net.arcs.push_back({b, a, l.bandwidthGBps});
  }
  return net;
}

double maxFlow(const FlowNetwork& net, std::span<const int> sources, std::span<const int> sinks) {
  // Edmonds-Karp on a residual graph with a super source and a super sink.
  const int n = net.vertices() + 2, s = n - 2, t = n - 1;
  struct R {
    int to;
    double cap;
    int rev;
  };
  std::vector<std::vector<R>> adj(n);
  auto add = [&](int a, int b, double c) {
    adj[a].push_back({b, c, static_cast<int>(adj[b].size())});
    adj[b].push_back({a, 0, static_cast<int>(adj[a].size()) - 1});
  };
  for (const FlowNetwork::Arc& a : net.arcs) add(a.from, a.to, a.capacity);
  for (int v : sources) add(s, v, kInf);
  for (int v : sinks) add(v, t, kInf);
  double total = 0;
  for (;;) {
    std::vector<std::pair<int, int>> via(n, {-1, -1});
    std::queue<int> q;
    q.push(s);
    via[s] = {s, -1};
    while (!q.empty() && via[t].first < 0) {
      const int v = q.front();
      q.pop();
      for (size_t i = 0; i < adj[v].size(); ++i)
        if (adj[v][i].cap > 1e-12 && via[adj[v][i].to].first < 0) {
          via[adj[v][i].to] = {v, static_cast<int>(i)};
          q.push(adj[v][i].to);
        }
    }
    if (via[t].first < 0) return total;
    double push = kInf;
    for (int v = t; v != s; v = via[v].first)
      push = std::min(push, adj[via[v].first][via[v].second].cap);
    if (push == kInf) return kInf;  // a source is a sink
    for (int v = t; v != s; v = via[v].first) {
      R& r = adj[via[v].first][via[v].second];
      r.cap -= push;
      adj[v][r.rev].cap += push;
    }
    total += push;
  }
}

double broadcastUpperBound(const FlowNetwork& net, int root) {
  double bound = kInf;
  for (int v = 0; v < net.ngpus; ++v) {
    if (v == root) continue;
    const int src[] = {root}, dst[] = {v};
    bound = std::min(bound, maxFlow(net, src, dst));
  }
  return bound;
}

double reduceUpperBound(const FlowNetwork& net, int root) {
  double bound = kInf;
  for (int v = 0; v < net.ngpus; ++v) {
    if (v == root) continue;
    const int src[] = {v}, dst[] = {root};
    bound = std::min(bound, maxFlow(net, src, dst));
  }
  return bound;
}

double allGatherUpperBound(const FlowNetwork& net) {
  const int n = net.ngpus;
  if (n < 2) return kInf;
  if (n > 16) fail(weftInvalidArgument, "allgather bound: {} GPUs, at most 16 supported", n);
  double bound = kInf;
  for (uint32_t mask = 1; mask + 1 < (1u << n); ++mask) {
    std::vector<int> a, b;
    for (int v = 0; v < n; ++v) ((mask >> v) & 1u ? a : b).push_back(v);
    bound = std::min(bound, n * maxFlow(net, a, b) / static_cast<double>(a.size()));
  }
  return bound;
}

double allReduceUpperBound(const FlowNetwork& net) {
  const int n = net.ngpus;
  if (n < 2) return kInf;
  double in = 0, out = 0;
  for (const FlowNetwork::Arc& a : net.arcs) {
    if (a.to < n) in += a.capacity;
    if (a.from < n) out += a.capacity;
  }
  double bound = std::min(in, out) / (2.0 * (n - 1));
  // Every bipartition with GPU 0 in A (n <= 16: at most 32767 of them).
  if (n > 16) fail(weftInvalidArgument, "allreduce bound: {} GPUs, at most 16 supported", n);
  for (uint32_t mask = 0; mask + 1 < (1u << (n - 1)); ++mask) {
    std::vector<int> a{0}, b;
    for (int v = 1; v < n; ++v) ((mask >> (v - 1)) & 1u ? a : b).push_back(v);
    bound = std::min({bound, maxFlow(net, a, b), maxFlow(net, b, a)});
  }
  return bound;
}

double treesRate(const FlowNetwork& net, PackedCollective c, std::span<const WeightedTree> trees) {
  const Paths paths = idlePaths(net);
  std::vector<double> load(net.arcs.size(), 0);
  // Allgather: each tree carries its share of one root's block, 1/n of the output.
  const double share = c == PackedCollective::AllGather ? 1.0 / net.ngpus : 1.0;
  for (const WeightedTree& t : trees) {
    const std::vector<double> l = treeLoad(net, paths, c, t.parent);
    for (size_t e = 0; e < load.size(); ++e) load[e] += share * t.weight * l[e];
  }
  return rateOfLoad(net, load);
}

Packing packTrees(const FlowNetwork& net, PackedCollective c, int root, double sharedLoad) {
  const int n = net.ngpus;
  Packing result;
  if (n == 1) {
    result.trees.push_back({{-1}, 1});
    result.rateGBps = kInf;
    return result;
  }
  // Garg-Koenemann: lengths start at delta / capacity and grow by (1 + eps * share) whenever a
  // tree uses an arc; stop when the capacity-weighted length reaches 1.
  const double eps = 0.03;
  const size_t m = net.arcs.size();
  const double delta = (1 + eps) / std::pow((1 + eps) * static_cast<double>(m), 1 / eps);
  std::vector<double> length(m);
  for (size_t e = 0; e < m; ++e) length[e] = delta / net.arcs[e].capacity;
  // Each transfer takes its idle-network path (hardware routes a GPU pair one way).
  const Paths paths = idlePaths(net);
  std::map<std::vector<int>, double> found;
  const std::vector<int> roots = [&] {
    std::vector<int> r;
    if (c == PackedCollective::Broadcast || c == PackedCollective::Reduce)
      r.push_back(root);
    else
      for (int v = 0; v < n; ++v) r.push_back(v);
    return r;
  }();
  // Allgather needs trees from every root: the roots take turns (the lengths still steer each
  // root's trees away from the links the others use).
  size_t turn = 0;
  for (;;) {
    double total = 0;
    for (size_t e = 0; e < m; ++e) total += length[e] * net.arcs[e].capacity;
    if (total >= 1) break;
    auto cost = [&](int a, int b) {
      double w = 0;
      for (int arc : paths.arcs[a][b]) w += length[arc];
      return w;
    };
    std::vector<Edge> edges;
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b) {
        if (a == b) continue;
        if ((down(c) && paths.arcs[a][b].empty()) || (up(c) && paths.arcs[b][a].empty())) continue;
        edges.push_back({a, b, (down(c) ? cost(a, b) : 0) + (up(c) ? cost(b, a) : 0), 0});
      }
    std::vector<int> best;
    double bestCost = kInf;
    for (int r : roots) {
      if (c == PackedCollective::AllGather && r != roots[turn % roots.size()]) continue;
      double cost = 0;
      std::vector<int> parent(n, -1);
      for (int k : minArborescence(n, r, edges)) {
        parent[edges[k].v] = edges[k].u;
        cost += edges[k].w;
      }
      if (cost < bestCost) {
        bestCost = cost;
        best = parent;
      }
    }
    const std::vector<double> load = treeLoad(net, paths, c, best);
    const double amount = rateOfLoad(net, load);
    found[best] += amount;
    ++turn;
    for (size_t e = 0; e < m; ++e)
      if (load[e] > 0) length[e] *= 1 + eps * amount * load[e] / net.arcs[e].capacity;
  }
  // Garg-Koenemann's weights are within a few percent of the optimum but spread over thousands
  // of trees. The LP over the trees it found, solved exactly, has a basic optimum with at most
  // one tree per link; trees under 1% of the total are then dropped and the LP solved again
  // over the rest (fewer, larger messages). Then links that several connections (GPU pairs)
  // cross are held to a share of their capacity and the LP is solved again over the trees kept,
  // until the set of shared links stops changing (at most kSharedRounds times): the links share
  // their bandwidth equally among the messages on them, not in proportion to the trees'
  // weights, and a saturated shared link idles whenever the connection the pipelines wait for
  // gets less than its share (replayed, full-load PCIe and QPI links cost up to 10%). Allreduce
  // needs more room than broadcast and reduce: its trees' second half, down, starts on those
  // links only once the first has reached the root, and must then catch up. (The shares are
  // the best of 0.7 to 0.95 in steps of 0.05 and 0.88 to 0.94 in the replays of the fixtures;
  // for allreduce the best share differs per allocation, and plan.cc's repackByReplay tries a
  // few more.)
  std::vector<std::vector<int>> candidates;
  for (const auto& [parent, w] : found) candidates.push_back(parent);
  // Allgather: one more column (lambda, the smallest root's total) and one row per root,
  // lambda - sum of the root's trees <= 0; maximise lambda. Weights are then shares of the
  // tree's root's block.
  const bool gather = c == PackedCollective::AllGather;
  if (!(sharedLoad > 0)) sharedLoad = c == PackedCollective::AllReduce ? 0.88 : 0.93;
  constexpr int kSharedRounds = 3;
  std::vector<bool> shared(m, false);
  // (Allgather is left at full load: its replay gains nothing from the headroom, which would
  // cost it its steady state.)
  for (int round = 0; round < 2 + (gather ? 0 : kSharedRounds); ++round) {
    if (round >= 2) {
      const std::vector<bool> before = shared;
      shared = sharedArcs(net, paths, c, candidates);
      if (round > 2 && shared == before) break;
    }
    const size_t k = candidates.size(), columns = k + (gather ? 1 : 0);
    std::vector<std::vector<double>> a(m + (gather ? n : 0), std::vector<double>(columns, 0));
    std::vector<double> b(a.size(), 0), objective(columns, gather ? 0 : 1);
    for (size_t t = 0; t < k; ++t) {
      const std::vector<double> load = treeLoad(net, paths, c, candidates[t]);
      for (size_t e = 0; e < m; ++e) a[e][t] = load[e] / net.arcs[e].capacity;
      if (gather) a[m + rootOf(candidates[t])][t] = -1;
    }
    for (size_t e = 0; e < m; ++e) b[e] = shared[e] ? sharedLoad : 1;
    if (gather) {
      objective[k] = 1;
      for (int r = 0; r < n; ++r) a[m + r][k] = 1;
    }
    const std::vector<double> x = maximize(a, b, objective);
    std::vector<double> sum(n, 0);  // per root (everything under root 0 unless allgather)
    for (size_t t = 0; t < k; ++t) sum[gather ? rootOf(candidates[t]) : 0] += x[t];
    std::vector<std::vector<int>> kept;
    result.trees.clear();
    for (size_t t = 0; t < k; ++t) {
      const double total = sum[gather ? rootOf(candidates[t]) : 0];
      if (x[t] > 0 && x[t] > (round == 0 ? 0.01 : 0.0) * total) {
        kept.push_back(candidates[t]);
        result.trees.push_back({candidates[t], x[t] / total});
      }
    }
    candidates = std::move(kept);
  }
  result.rateGBps = treesRate(net, c, result.trees);
  return result;
}

namespace {

double ringRateOver(const FlowNetwork& net, const Paths& paths, PackedCollective c,
                    std::span<const int> order, int root) {
  const int n = static_cast<int>(order.size());
  if (n < 2) return kInf;
  std::vector<double> load(net.arcs.size(), 0);
  for (int i = 0; i < n; ++i) {
    const int a = order[i], b = order[(i + 1) % n];
    // Broadcast: a chain from the root; reduce: a chain ending at the root.
    if ((c == PackedCollective::Broadcast && b == root) ||
        (c == PackedCollective::Reduce && a == root))
      continue;
    for (int arc : paths.arcs[a][b]) load[arc] += 1;
  }
  // Ring allreduce moves 2(n-1)/n of the buffer over each edge, allgather (n-1)/n of the output.
  const double rate = rateOfLoad(net, load);
  if (c == PackedCollective::AllReduce) return rate * n / (2.0 * (n - 1));
  if (c == PackedCollective::AllGather) return rate * n / (n - 1.0);
  return rate;
}

}  // namespace

LinkRoutes linkRoutes(const FlowNetwork& net) {
  LinkRoutes routes;
  for (const FlowNetwork::Arc& a : net.arcs) routes.capacityGBps.push_back(a.capacity);
  const Paths paths = idlePaths(net);
  routes.route.assign(net.ngpus, std::vector<std::vector<uint32_t>>(net.ngpus));
  for (int a = 0; a < net.ngpus; ++a)
    for (int b = 0; b < net.ngpus; ++b)
      routes.route[a][b].assign(paths.arcs[a][b].begin(), paths.arcs[a][b].end());
  return routes;
}

double ringRate(const FlowNetwork& net, PackedCollective c, std::span<const int> order, int root) {
  return ringRateOver(net, idlePaths(net), c, order, root);
}

RingChoice bestRing(const FlowNetwork& net, PackedCollective c, int root) {
  const int n = net.ngpus;
  RingChoice best;
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  const bool rooted = c == PackedCollective::Broadcast || c == PackedCollective::Reduce;
  std::swap(order[0], order[rooted ? root : 0]);
  std::sort(order.begin() + 1, order.end());
  best.order = order;
  const Paths paths = idlePaths(net);
  best.rateGBps = ringRateOver(net, paths, c, order, root);
  if (n > 9) return best;
  while (std::next_permutation(order.begin() + 1, order.end())) {
    const double r = ringRateOver(net, paths, c, order, root);
    if (r > best.rateGBps * (1 + 1e-9)) {
      best.order = order;
      best.rateGBps = r;
    }
  }
  return best;
}

}  // namespace weft::topology
