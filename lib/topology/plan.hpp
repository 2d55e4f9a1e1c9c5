// The decision for a set of GPUs on one host, per collective: the packed trees, the best single
// ring, which of the two runs (the faster in the model of packing.hpp; never slower than the
// ring), and the max-flow upper bound both are judged against. weft-topo and weft-sim print it.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "lib/topology/packing.hpp"

namespace weft::topology {

struct CollectivePlan {
  PackedCollective collective = PackedCollective::Broadcast;
  int root = 0;
  double upperBoundGBps = 0;
  Packing packed;
  RingChoice ring;
  bool ringChosen = false;  // the ring is at least as fast as the packing
  double chosenGBps() const { return ringChosen ? ring.rateGBps : packed.rateGBps; }
};

struct GpuPlan {
  std::vector<int> gpus;  // graph nodes, rank order
  CollectivePlan broadcast, reduce, allreduce, allgather;
};

// `gpus`: graph nodes of the ranks' GPUs on one host (at least two); `root`: the broadcast and
// reduce root.
GpuPlan planGpus(const Graph& graph, std::span<const int> gpus, int root = 0);

// GPU nodes of the host-local cudaN indexes in `indexes` (all of the host's GPUs when empty).
// Throws Error (weftInvalidArgument) naming an index the host does not have.
std::vector<int> gpusByIndex(const Graph& graph, std::span<const int> indexes);

// The plan's schedules replayed by the cost model (algorithms/cost: chunked, pipelined, every
// message a flow sharing its links fairly) over the allocation's links: the packed trees, and
// the ring (a chain along it for broadcast and reduce, ring.cc in its order for allreduce and
// allgather). `bytes`: the buffer (allgather: the output), float32 elements.
struct Replayed {
  double packedGBps = 0, ringGBps = 0;
};
Replayed replayPlan(const Graph& graph, const GpuPlan& plan, const CollectivePlan& collective,
                    uint64_t bytes, uint64_t chunkBytes);

// Allreduce's LP holds links that several GPU pairs cross to a share of their capacity
// (packTrees' sharedLoad), since the cost model shares a link equally among its messages and not
// by tree weight; which share replays fastest differs per allocation (on the DGX-1, with the
// pieces of packed_trees.cc: 0.88 for all eight GPUs and cuda 0,1,2,4,5,6, 0.93 for cuda 0-6,
// no hold for cuda 0,1,2,4,5). NCCL-style search and evaluate: the shares tried besides
// packTrees' default (0.88).
inline constexpr double kAllReduceSharedLoads[] = {0.93, 1.0};

// replayPlan, but for allreduce the plan's packing is also packed again at each of
// kAllReduceSharedLoads and replayed: the collective keeps the packing that replays fastest (its
// steady-state rate and ringChosen updated), and the replay returned is that packing's. Other
// collectives: replayPlan.
Replayed repackByReplay(const Graph& graph, const GpuPlan& plan, CollectivePlan& collective,
                        uint64_t bytes, uint64_t chunkBytes);

// The choice made again from the replay: the ring when its replayed schedule is at least as fast
// as the packed trees' (the steady state leaves out the pipelines filling and the links' sharing,
// so the two can disagree where the packing is hardly ahead), so the choice is never below the
// ring replayed the same way. Returns the chosen schedule's replayed rate.
double chooseByReplay(CollectivePlan& collective, const Replayed& replayed);

// A chain along `order` (order[0] is the root): down it for broadcast, up it for reduce.
WeightedTree chainTree(std::span<const int> order, PackedCollective c);

std::string formatGpuPlan(const Graph& graph, const GpuPlan& plan);
std::string gpuPlanJson(const Graph& graph, const GpuPlan& plan);

}  // namespace weft::topology
