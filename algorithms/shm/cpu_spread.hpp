// Spreading a host's ranks over its CPUs. A rank that waits for a peer sleeps or yields, and
// the kernel likes to wake it, or leave it, on the CPU of the rank that woke it: two ranks of a
// job can then share one CPU while another idles, and stay so (each runs half the time, so
// the load balancer sees nothing to move). On the 2-core Intel Xeon build machine, with this
// off (WEFT_SHM_SPREAD=0), unbound 2-rank allreduces of 32 KiB took 8.9-10.4 us per call in 8
// of 12 launches of 300 calls (3.9-4.9 in the others), and 4-rank alltoalls of 256 KiB 75-97
// us in 5 of 12 (26-38); with it, every launch took 3.6-5.0 and 26.5-32.8 us. mpirun avoids it
// by binding ranks to cores; weft cannot count on a launcher that does.
//
// So each rank publishes the CPU it runs on (it already does, for waitFor), and before a
// collective looks at where the others last ran: if more ranks share its CPU than their share
// of the cores, the highest of them (one only, so that they do not all leave together) moves to
// the allowed CPU with the fewest, when that leaves both CPUs better off. It moves by setting
// its affinity to that one CPU and at once back to the mask it had: the kernel migrates it, and
// the mask the application set is unchanged. Moves back off (1 ms, doubling to 256 ms), so a
// rank that the kernel keeps putting back costs a few moves a second at most.
#pragma once

#include <cstdint>
#include <span>

namespace weft {

// How many ranks last ran on CPU `now`, me included, if `me` is the highest of them; 0 if a
// higher rank shares it (that one moves). `rankCpus[q]` is where rank q last ran (-1: not
// known yet); mine is `now` whatever it says.
int ranksOnMyCpu(std::span<const int32_t> rankCpus, int me, int32_t now);

// Whether `onMine` ranks on one CPU are more than their share: `ranks` over `cores` CPUs,
// rounded up.
bool crowded(int onMine, int ranks, int cores);

// The CPU of `allowed` (ascending), other than `now`, with the fewest of `rankCpus`, if that is
// at most onMine - 2 (after the move it has at most onMine - 1, and mine onMine - 1); -1 if no
// CPU qualifies. The lowest such CPU on a tie.
int32_t leastCrowdedCpu(std::span<const int32_t> rankCpus, int32_t now, int onMine,
                        std::span<const int32_t> allowed);

}  // namespace weft
