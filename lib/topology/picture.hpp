// One system picture for the whole communicator: every rank describes what it sees (its host's
// graph, its host identity, its CPU and GPU), the descriptions travel over the bootstrap's
// allGather, and every rank merges the same list the same way, so all decide from one picture.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lib/topology/graph.hpp"
#include "lib/topology/placement.hpp"

namespace weft::topology {

struct LocalView {
  std::string hostId;  // equal exactly for ranks that share a host (lib/bootstrap/host_id)
  int cpu = -1;        // where the rank runs (OS index), -1 unknown
  int gpu = -1;        // its GPU (cudaN index), -1 none
  Graph graph;         // its host, as discovered
};

std::vector<uint8_t> encodeView(const LocalView& view);
// Throws Error (weftInternalError) naming `rank` when the bytes are not a view.
LocalView decodeView(std::span<const uint8_t> bytes, int rank);

struct SystemPicture {
  Graph graph;                    // every host once, in order of its first rank
  std::vector<RankPlace> places;  // per rank
  std::vector<int> ring;          // ringOrder(places)
};

// Hosts are taken from the first rank that reports them; hosts are joined pairwise by network
// links (bandwidth: the smaller NIC count of the two, at kNetworkGBps each, at least one).
SystemPicture mergeViews(std::span<const LocalView> views);

// What WEFT_TOPO_DUMP_FILE receives: the graph, each rank's place and the ring, as JSON.
std::string formatPictureJson(const SystemPicture& picture);

}  // namespace weft::topology
