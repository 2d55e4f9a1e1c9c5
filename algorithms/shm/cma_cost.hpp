// How expensive a CMA copy (process_vm_readv) is on this machine, measured against memcpy, and
// which collectives read peers' ordinary buffers through CMA because of it.
//
// The answer differs between machines of one kind: on the 2-core Intel Xeon build machine a
// process_vm_readv of 128 KiB-1 MiB took 1.7-1.9x a memcpy's time (cmaCostRatio, 2 concurrent
// processes), and reading peers' buffers through CMA took 0.13-0.8x the time of staging through
// the slots for most collectives; on the 2-core AMD EPYC build machine one process_vm_readv of
// 1 MiB took 70 us against about 25 us for a memcpy (~2.8x; perf/README at ed11cdf), and staging
// was faster for every collective but scatter (the comment in ShmCollectives::decidePath).
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/schedule.hpp"

namespace weft {

// Staging copies every byte twice (into the slot, out of it), CMA once: CMA wins while its copy
// costs less than two memcpys. The margin above 2 pays for the slot handed between cores, which
// CMA does not need. Between the two machines' ratios above (1.7-1.9 and ~2.8).
inline constexpr double kCmaCheapRatio = 2.2;

// Bytes one calibration copy moves: in the L2 cache of both machines, so that it measures the
// copy and not the memory.
inline constexpr size_t kCmaCostProbeBytes = 256 << 10;

// The time of a process_vm_readv of `bytes` from this process to itself over that of a memcpy of
// the same bytes, the fastest of `reps` each. 0 when the kernel refuses CMA.
double cmaCostRatio(size_t bytes = kCmaCostProbeBytes, int reps = 8);

// The ratio the local ranks go by: the median of every rank's (the same answer on every rank
// given the same list). Empty: 0.
double agreedCmaCostRatio(std::vector<double> ratios);

// Whether collective `c` on `ranks` local ranks with ordinary (private) buffers reads peers'
// buffers through CMA rather than staging through the slots, given the agreed cost ratio.
// Scatter always does (the root would otherwise copy every block into its slot alone). Where
// CMA is cheap, allgather, alltoall and gather do at every rank count; broadcast and allreduce
// only on 2 ranks (on more, every receiver reads the same root: 4 ranks took 1.6-1.8x staging's
// time for broadcast, 1.0-1.1x for allreduce); reduce-scatter and reduce stage (1.0-1.25x).
bool cmaPreferred(Collective c, int ranks, double costRatio);

}  // namespace weft
