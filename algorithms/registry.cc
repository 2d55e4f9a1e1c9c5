#include <array>

#include "algorithms/algorithm.hpp"

namespace weft {
namespace {

constexpr uint32_t bit(Collective c) {
  return 1u << static_cast<int>(c);
}

constexpr uint32_t kAllReduce = bit(Collective::AllReduce), kBroadcast = bit(Collective::Broadcast),
                   kReduce = bit(Collective::Reduce), kAllGather = bit(Collective::AllGather),
                   kReduceScatter = bit(Collective::ReduceScatter),
                   kAlltoAll = bit(Collective::AlltoAll), kGather = bit(Collective::Gather),
                   kScatter = bit(Collective::Scatter);

// The first entry serving a collective is what the tuner falls back to when it has no model.
constexpr std::array kAlgorithms = {
    Algorithm{AlgorithmId::Ring, "ring", kAllReduce | kAllGather | kReduceScatter,
              "ring over ranks in order; allreduce = reduce-scatter then allgather, pipelined in "
              "chunks",
              &buildRing, Symmetry::Rotation, kAllReduce | kAllGather | kReduceScatter},
    Algorithm{AlgorithmId::Chain, "chain", kBroadcast | kReduce,
              "pipelined chain from (broadcast) or toward (reduce) the root, in chunks",
              &buildChain, Symmetry::None, kBroadcast | kReduce},
    Algorithm{AlgorithmId::Pairwise, "pairwise", kAlltoAll,
              "pairwise exchange: step k sends to rank+k and receives from rank-k, a window of "
              "steps in flight",
              &buildPairwise, Symmetry::Rotation, 0},
    Algorithm{AlgorithmId::Direct, "direct", kGather | kScatter,
              "the root exchanges one message with every other rank", &buildDirect, Symmetry::None,
              0},
    Algorithm{AlgorithmId::Tree, "tree", kAllReduce | kBroadcast | kReduce,
              "double binary tree (NCCL's: the second tree mirrors or shifts the first), each "
              "carrying half the buffer, pipelined in chunks",
              &buildTree, Symmetry::None, kAllReduce | kBroadcast | kReduce},
    Algorithm{AlgorithmId::HalvingDoubling, "halving-doubling", kAllReduce | kReduceScatter,
              "Rabenseifner: reduce-scatter by recursive halving, then (allreduce) allgather by "
              "recursive doubling; non-powers of two fold pairwise first",
              &buildHalvingDoubling, Symmetry::Xor, 0},
    Algorithm{AlgorithmId::RecursiveDoubling, "recursive-doubling", kAllReduce | kAllGather,
              "log2 n rounds with partners differing in one bit, exchanging everything gathered "
              "so far (small messages); non-powers of two fold pairwise first",
              &buildRecursiveDoubling, Symmetry::Xor, 0},
    Algorithm{AlgorithmId::Knomial, "knomial", kAllReduce | kBroadcast | kReduce,
              "k-nomial tree of radix 4, pipelined in chunks; allreduce = reduce to rank 0, then "
              "broadcast",
              &buildKnomial, Symmetry::None, kAllReduce | kBroadcast | kReduce},
    Algorithm{AlgorithmId::Binomial, "binomial", kBroadcast | kReduce | kGather | kScatter,
              "binomial tree: pipelined broadcast and reduce; gather and scatter move whole "
              "subtrees in one message",
              &buildBinomial, Symmetry::None, kBroadcast | kReduce},
    Algorithm{AlgorithmId::ScatterAllGather, "scatter-allgather", kBroadcast,
              "binomial scatter of n blocks, then ring allgather (van de Geijn; large messages)",
              &buildScatterAllGather, Symmetry::None, kBroadcast},
    Algorithm{AlgorithmId::Bruck, "bruck", kAllGather | kAlltoAll,
              "Bruck: ceil(log2 n) rounds at distances 1, 2, 4, ... for any n (small messages)",
              &buildBruck, Symmetry::None, 0},
    Algorithm{AlgorithmId::Hierarchical, "hierarchical",
              kAllReduce | kAllGather | kReduceScatter | kBroadcast | kAlltoAll,
              "multi-host: each host reduces (allreduce, reduce-scatter) or gathers (allgather) "
              "onto its first m ranks, those run m inter-host rings at once, then share on their "
              "host (m: fewest ranks per host); broadcast: a tree of one rank per host "
              "(binomial, binary or chain by message size and host count), each passing chunks "
              "on to its host; alltoall: one packed message per lane and host pair",
              &buildHierarchical, Symmetry::Rotation,
              kAllReduce | kAllGather | kReduceScatter | kBroadcast},
};

}  // namespace

std::span<const Algorithm> algorithmRegistry() {
  return kAlgorithms;
}

const Algorithm* findAlgorithm(Collective collective, std::string_view name) {
  for (const Algorithm& a : kAlgorithms)
    if (a.serves(collective) && name == a.name) return &a;
  return nullptr;
}

const Algorithm* findAlgorithm(AlgorithmId id) {
  for (const Algorithm& a : kAlgorithms)
    if (a.id == id) return &a;
  return nullptr;
}

}  // namespace weft
