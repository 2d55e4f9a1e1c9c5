// Rings and trees for a set of GPUs on one host, over every link between them (NVLink, PCIe
// switches, the packages' root complexes and the interconnect between packages), and the
// max-flow upper bounds they are judged against. Pure functions of the graph.
//
// Model: a transfer from GPU a to GPU b follows a path of directed links that passes through
// no other GPU (switches, packages and the NVSwitch fabric forward; GPUs forward only as tree
// nodes). In steady state a schedule that moves S bytes puts load(e) * S bytes on directed
// link e; its throughput is S / max_e(load(e) * S / capacity(e)).
//   - Broadcast over trees rooted at the root, tree t carrying a share w_t of the buffer;
//     reduce over the same kind of trees, data flowing up (child to parent).
//   - Allreduce over trees (any root each): reduce toward the tree's root over the reversed
//     edges, broadcast back down, both directions of every link at once (full duplex).
//   - Allgather over trees from every root: each root's block is split over its trees; the
//     rate counts the whole output (n blocks), as nccl-tests' algbw does.
//   - A ring (the NCCL-style answer): broadcast is a chain along it from the root; allreduce is
//     reduce-scatter + allgather, 2(n-1)/n of the buffer over every ring edge; allgather
//     (n-1)/n of the output.
// Packing (Blink): fractional packing of trees by Garg-Koenemann, each round adding the tree of
// least total link length (Edmonds' minimum arborescence over shortest paths).
// Upper bounds, valid for every schedule of the family:
//   - broadcast from r: min over GPUs v of maxflow(r -> v) (every byte must reach every v);
//     reduce to r: min over v of maxflow(v -> r) (every input of v must reach r);
//   - allreduce: the smallest of (a) min over bipartitions (A, B) of the GPUs of
//     min(maxflow(A -> B), maxflow(B -> A)) (every result in B depends on every input in A) and
//     (b) the port bound: trees deliver 2(n-1) messages of their share into GPUs (n-1 down,
//     n-1 up), so throughput <= (sum of GPU ingress capacity) / (2(n-1)), likewise egress;
//   - allgather: min over sets A of GPUs of n * maxflow(A -> rest) / |A| (the |A| blocks of A,
//     each 1/n of the output, must all cross).
#pragma once

#include <span>
#include <vector>

#include "algorithms/cost/simulator.hpp"
#include "algorithms/packed_trees.hpp"
#include "lib/topology/graph.hpp"

namespace weft::topology {

// The directed network of one allocation: vertex i < gpus.size() is rank i's GPU; the others
// are the switches, packages and NVSwitch fabric of the GPUs' host. GPUs outside the
// allocation are left out (they belong to other jobs).
struct FlowNetwork {
  struct Arc {
    int from, to;
    double capacity;  // GB/s
  };
  std::vector<int> node;  // graph node of each vertex
  std::vector<Arc> arcs;
  int ngpus = 0;
  int vertices() const { return static_cast<int>(node.size()); }
};

// `gpus`: graph nodes of the ranks' GPUs, in rank order, all on one host. Throws Error
// (weftInvalidArgument) when they are not GPUs of one host or are repeated.
FlowNetwork flowNetwork(const Graph& graph, std::span<const int> gpus);

// Maximum flow (GB/s) from the source vertices to the sink vertices.
double maxFlow(const FlowNetwork& net, std::span<const int> sources, std::span<const int> sinks);

double broadcastUpperBound(const FlowNetwork& net, int root);
double reduceUpperBound(const FlowNetwork& net, int root);
double allReduceUpperBound(const FlowNetwork& net);
double allGatherUpperBound(const FlowNetwork& net);

enum class PackedCollective { Broadcast, Reduce, AllReduce, AllGather };

struct Packing {
  std::vector<WeightedTree> trees;  // weights sum to 1 (per root for allgather)
  double rateGBps = 0;              // the trees' throughput in the model above
};

// Trees for broadcast from or reduce to `root`, for allreduce (any roots), or for allgather
// (trees from every root; a tree's weight is its share of its root's block); trees of tiny weight
// (< 1%) are dropped and the others rescaled (fewer, larger messages), and the rate is of what is
// returned. `sharedLoad` (0: the collective's default, 0.88 for allreduce, 0.93 for the others):
// the share of their capacity that links several GPU pairs cross are held to in the LP.
Packing packTrees(const FlowNetwork& net, PackedCollective collective, int root = 0,
                  double sharedLoad = 0);
// The throughput of given trees in the model.
double treesRate(const FlowNetwork& net, PackedCollective collective,
                 std::span<const WeightedTree> trees);

// The allocation as the cost model's link-by-link machine: every arc a link, the route of a
// message from rank a to rank b the path the model above gives it.
LinkRoutes linkRoutes(const FlowNetwork& net);

struct RingChoice {
  std::vector<int> order;  // ranks in ring order, starting with rank 0 (or the root)
  double rateGBps = 0;
};
// The single ring of the highest throughput for the collective (exhaustive up to 9 GPUs, else
// the ranks' order), with its throughput in the model above.
RingChoice bestRing(const FlowNetwork& net, PackedCollective collective, int root = 0);
double ringRate(const FlowNetwork& net, PackedCollective collective, std::span<const int> order,
                int root = 0);

}  // namespace weft::topology
