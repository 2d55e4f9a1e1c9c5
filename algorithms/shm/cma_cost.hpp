// How expensive a CMA copy (process_vm_readv) is on this machine, measured against memcpy, and
// which collectives read peers' ordinary buffers through CMA because of it.
//
// The answer differs between machines of one kind: on the 2-core Intel Xeon build machine a
// process_vm_readv of 128 KiB-1 MiB took 1.7-1.9x a memcpy's time (cmaCostRatio, 2 concurrent
// processes), and reading peers' buffers through CMA took 0.13-0.8x the time of staging through
// the slots for most collectives; on the 2-core AMD EPYC build machine one process_vm_readv of
// 1 MiB took 70 us against about 25 us for a memcpy (~2.8x; perf/README at ed11cdf), and staging
// was faster for every collective but scatter (the comment in ShmCollectives::decidePath). On a
// third (AMD EPYC, 2026-12-04) it cost 3.45 memcpys and CMA was still the faster path for a
// 2-rank allreduce (0.54-0.56x staging's time at 256 KiB-2 MiB): so by default the ranks time
// both paths instead (path_trials.hpp), and the rule below decides only with WEFT_SHM_TUNE=0 or
// WEFT_SHM_CMA_COST given, and for the calls the trials do not cover.
#pragma once

#include <cstddef>
#include <cstdint>
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
double cmaCostRatio(size_t bytes = kCmaCostProbeBytes, int reps = 16);

// The ratio the local ranks go by: the median of every rank's (the same answer on every rank
// given the same list). Empty: 0.
double agreedCmaCostRatio(std::vector<double> ratios);

// Large outputs go through the slots, where they are written with streaming stores
// (stream_copy.hpp) and CMA's copies by the kernel are not: CMA only while the local ranks'
// outputs together are at most these. Same machine and method as below, 5 runs per size, time
// with CMA over staged's: 2 ranks, allgather 0.73-0.77 at 8-16 MiB but 0.79 and later 1.14 at
// 32 MiB, alltoall 0.75-0.97 at 8-16 MiB and 1.05 at 32 MiB, broadcast 0.85 at 8 MiB and 1.00
// at 16 MiB; 4 ranks, allgather 0.91-0.94 at 8 MiB but 1.40-1.49 at 16 MiB (once 0.99),
// alltoall 0.72-0.87 at 8 MiB and 0.99-1.10 at 16 MiB. Allreduce (2 ranks, bound to cores,
// after its CMA pieces landed in the output, c9a2573): 0.87-0.89 at 16 MiB, 1.17 at 32 MiB.
inline constexpr uint64_t kCmaMaxHostOutputBytes = uint64_t{32} << 20;

// Allreduce on 3 or 4 ranks reads peers through CMA from kCmaAllReduceFromBytes per rank while
// the host's outputs together are at most kCmaAllReduceMaxHostOutputBytes (2 ranks: above the
// inline size, ShmCollectives::cmaPairAllReduce, up to kCmaMaxHostOutputBytes). Intel Xeon build
// machine (2 cores, so these ranks share them), at 5e0cb10, 3-5 alternating weft-perf runs,
// medians, time with WEFT_SHM_MODE=cma over staged's: 4 ranks 1.38 at 32 KiB, 1.13 at 128 KiB,
// 0.83-0.85 at 256 KiB, 0.84 at 512 KiB, 0.95 at 1 MiB, 0.89 at 2 MiB, 0.88 at 4 MiB, 1.27 at 8
// MiB, 1.67 at 16 MiB; in place 0.97 at 256 KiB, 0.85 at 1 MiB, 0.64 at 4 MiB; 3 ranks 1.10 at 64
// KiB, 0.93 at 256 KiB, 0.92 at 1 MiB (0.79 in place), 0.77 at 4 MiB, 0.99 at 8 MiB. On 5, 6 and 8
// ranks CMA lost at every size tried (1.05-2.08 at 64 KiB-4 MiB): every rank reads and writes a
// smaller slice of every peer per system call.
inline constexpr int kCmaAllReduceMaxRanks = 4;
inline constexpr uint64_t kCmaAllReduceFromBytes = 256 << 10;
inline constexpr uint64_t kCmaAllReduceMaxHostOutputBytes = uint64_t{16} << 20;

// Whether collective `c` on `ranks` local ranks with ordinary (private) buffers reads peers'
// buffers through CMA rather than staging through the slots, given the agreed cost ratio and
// `blockBytes`, the bytes of one rank's block (count x element size). Scatter always does (the root
// would otherwise copy every block into its slot alone). Where CMA is cheap, allgather, alltoall
// and gather do at every rank count; broadcast only on 2 ranks (on more, every receiver reads
// the same root: 4 ranks took 1.6-1.8x staging's time); allreduce on 2 ranks, and on 3-4 within
// the sizes above; reduce-scatter and reduce stage (0.8-1.25x); all below the limits above.
bool cmaPreferred(Collective c, int ranks, double costRatio, uint64_t blockBytes);

}  // namespace weft
