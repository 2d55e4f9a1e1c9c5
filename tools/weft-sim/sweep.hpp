// The simulation weft-sim prints: for every size of the sweep, every allowed algorithm priced
// at its best chunk size and channel count, and the tuner's pick (lib/tuner: the same search the
// runtime makes, for the machine given on the command line).
#pragma once

#include <vector>

#include "lib/tuner/tuner.hpp"
#include "options.hpp"

namespace weft::sim {

struct SizeResult {
  uint64_t bytes = 0;  // the size column (nccl-tests: the larger buffer of a rank)
  uint64_t count = 0;  // the API's count argument
  std::vector<Candidate> priced;
  TunerChoice pick;
};

// The machine parameters the options describe (a tuning file, then the flags on top).
MachineParams machineParams(const Options& options);
// Sizes from minBytes, times stepFactor, up to maxBytes.
std::vector<uint64_t> sweepSizes(const Options& options);
// busbw = algbw * this (nccl-tests' factors).
double busBandwidthFactor(Collective collective, int nranks);

std::vector<SizeResult> simulateSweep(const Options& options);

}  // namespace weft::sim
