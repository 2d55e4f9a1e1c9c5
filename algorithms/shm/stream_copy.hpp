// Copies into memory that will not be read again soon (a collective's output) with
// non-temporal stores: the data goes to memory without first reading the destination lines
// into the cache and without evicting the working set. Worth it only for large copies.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft {

inline constexpr size_t kStreamCopyMinBytes = 4 << 10;
// A collective's outputs are written with streaming stores once the local ranks' outputs
// together reach this size: their inputs, outputs and slots no longer stay in the shared
// cache, and cached stores would first read every output line from memory. 7-9 alternating
// weft-perf runs per size against 38eb0ed on the 2-core AMD EPYC build machine (L2 512 KiB per
// core, L3 32 MiB), medians, time with this limit over the former one (16 MiB of output per
// rank): allreduce 2 ranks 0.97 at 4 MiB, 0.58 at 8 MiB; broadcast 0.68-0.85 (2 ranks),
// 0.53-0.85 (4); alltoall 0.78-0.79 (2), 0.57-0.74 (4); allgather 0.73-0.93 (2), 0.60-0.92
// (4); 8 ranks, allreduce and allgather 0.66-0.72 at 1-4 MiB; weftMemAlloc allreduce
// 0.65-0.84. (Identical runs of one build differ by up to 0.87-1.13 this way.) Half this limit
// took 1.2x as long on a 2-rank 2 MiB allreduce.
inline constexpr uint64_t kStreamHostOutputBytes = 8 << 20;
// Where the output lines are ones the collective has just read (an allreduce in place: its
// output is its input), a streaming store must first evict the line from the cache, and cached
// stores win up to a larger size, or at every size where each rank has a core: there the
// outputs stream only from this much, and only where the ranks share cores. (Measurements in
// perf/README.md, "in-place allreduce, alltoall and gather outputs" and "an Intel Xeon build
// machine again": 2 ranks in place with cached stores took 0.47-0.63x the time of streaming
// at 16-256 MiB per rank with weftMemAlloc buffers on the Intel Xeon build machine, and
// 0.90-1.02x at 16-32 MiB per rank on the Zen 4 one; 4 ranks on those 2 cores took 1.05-1.45x
// as long from 32 MiB of host output on the Zen 4 machine, and 0.55-0.9x on the Intel one.)
inline constexpr uint64_t kStreamHostReadOutputBytes = 32 << 20;

// Whether a collective writing `outputBytes` per rank on `ranks` local ranks streams its
// output; `justRead`: the output lines are ones it has just read; `sharedCores`: the ranks
// outnumber the cores they run on.
inline bool streamOutput(uint64_t outputBytes, int ranks, bool justRead, bool sharedCores) {
  if (justRead && !sharedCores) return false;
  return outputBytes * static_cast<uint64_t>(ranks) >=
         (justRead ? kStreamHostReadOutputBytes : kStreamHostOutputBytes);
}

// Asks for `bytes` at `p` in this core's cache, owned for writing (PREFETCHW; a no-op where
// the CPU lacks it), so that the stores that follow later need not wait for other cores to
// give the lines up.
void prefetchForWrite(void* p, size_t bytes);

// memcpy semantics (no overlap). Falls back to memcpy below kStreamCopyMinBytes or without
// AVX2.
void streamCopy(void* dst, const void* src, size_t bytes);

}  // namespace weft
