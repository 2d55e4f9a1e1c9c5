#include <array>

#include "algorithms/algorithm.hpp"

namespace weft {
namespace {

constexpr uint32_t bit(Collective c) { return 1u << static_cast<int>(c); }

constexpr std::array kAlgorithms = {
    Algorithm{AlgorithmId::Ring, "ring",
              bit(Collective::AllReduce) | bit(Collective::AllGather) |
                  bit(Collective::ReduceScatter),
              "ring over ranks in order; allreduce = reduce-scatter then allgather, pipelined in "
              "chunks",
              &buildRing},
    Algorithm{AlgorithmId::Chain, "chain", bit(Collective::Broadcast) | bit(Collective::Reduce),
              "pipelined chain from (broadcast) or toward (reduce) the root, in chunks",
              &buildChain},
    Algorithm{AlgorithmId::Pairwise, "pairwise", bit(Collective::AlltoAll),
              "pairwise exchange: step k sends to rank+k and receives from rank-k, a window of "
              "steps in flight",
              &buildPairwise},
    Algorithm{AlgorithmId::Direct, "direct", bit(Collective::Gather) | bit(Collective::Scatter),
              "the root exchanges one message with every other rank", &buildDirect},
};

}  // namespace

std::span<const Algorithm> algorithmRegistry() { return kAlgorithms; }

const Algorithm* findAlgorithm(Collective collective, std::string_view name) {
  for (const Algorithm& a : kAlgorithms)
    if (a.serves(collective) && name == a.name) return &a;
  return nullptr;
}

}  // namespace weft
