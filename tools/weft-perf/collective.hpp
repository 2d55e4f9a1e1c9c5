// The collectives weft-perf measures, named as nccl-tests names its binaries (all_reduce_perf
// measures "all_reduce").
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace weft::perf {

enum class Collective {
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  Reduce,
  AlltoAll,
  Gather,
  Scatter,
  SendRecv,
};

inline constexpr std::array<Collective, 9> kCollectives = {
    Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
    Collective::Broadcast, Collective::Reduce,    Collective::AlltoAll,
    Collective::Gather,    Collective::Scatter,   Collective::SendRecv};

constexpr std::string_view collectiveName(Collective c) {
  switch (c) {
    case Collective::AllReduce: return "all_reduce";
    case Collective::AllGather: return "all_gather";
    case Collective::ReduceScatter: return "reduce_scatter";
    case Collective::Broadcast: return "broadcast";
    case Collective::Reduce: return "reduce";
    case Collective::AlltoAll: return "alltoall";
    case Collective::Gather: return "gather";
    case Collective::Scatter: return "scatter";
    case Collective::SendRecv: return "sendrecv";
  }
  return "?";
}

inline std::optional<Collective> parseCollective(std::string_view name) {
  for (Collective c : kCollectives)
    if (collectiveName(c) == name) return c;
  return std::nullopt;
}

// Collectives that take a reduction operator (the others only move bytes).
constexpr bool isReducing(Collective c) {
  return c == Collective::AllReduce || c == Collective::ReduceScatter || c == Collective::Reduce;
}

// Collectives that take a root.
constexpr bool isRooted(Collective c) {
  return c == Collective::Broadcast || c == Collective::Reduce || c == Collective::Gather ||
         c == Collective::Scatter;
}

}  // namespace weft::perf
