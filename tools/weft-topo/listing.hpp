// What weft-topo prints, as pure functions of their inputs: the algorithm registry, and the
// tuner's decisions for a communicator's shape (collective x size range).
#pragma once

#include <string>
#include <vector>

#include "lib/tuner/tuner.hpp"

namespace weft::topo {

// One line per registry entry: name, the collectives it serves, whether it pipelines in chunks,
// its description.
std::string formatAlgorithms();

// The communicator the tuning table is for.
struct CommShape {
  int nranks = 1;
  int ranksPerHost = 1;
  std::string transport;  // its transport's name (shm, ucx, loopback)
  bool native = false;    // native shared-memory collectives are set up
};

// For every tunable collective, sizes 1 B .. maxBytes (one row per run of power-of-two buckets
// with the same algorithm): the algorithm (or native), and the chunk size, channels and
// predicted time at the range's first size. Float32 elements.
std::string formatTuning(Tuner& tuner, const CommShape& comm, uint64_t maxBytes);

}  // namespace weft::topo
