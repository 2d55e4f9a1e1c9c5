// weft-perf --calibrate FILE: measures this machine's parameters for weft's cost model and
// writes them to a tuning file (WEFT_TUNE_FILE; format in algorithms/cost/tune_file.hpp).
//
// Every rank of the job takes part; run it with the ranks placed on the link class to measure:
//   weftrun -n 2 weft-perf --calibrate tune.txt                     # shm, reductions, copies
//   weftrun -n 4 weft-perf --calibrate tune.txt                     # then: oversubscription
//   WEFT_SHM_DISABLE=1 weftrun -n 2 weft-perf --calibrate tune.txt  # ucx (UCX inside a host)
//   mpirun -np 2 --host a,b weft-perf --calibrate tune.txt --link net  # one rank per host
// What it measures (calibration_fit.hpp has the arithmetic):
//   - the link: ring exchanges of one 8-byte message, of a burst of 32 such messages, and of
//     single messages from 64 KiB to 64 MiB: per-message CPU, latency, bandwidth;
//   - with --link shm also reduction (float32 sum) and memcpy rates by size, timed right after
//     an exchange into the buffer the peer has just read, as schedule steps run them; every
//     datatype's reduction on private 4 MiB operands; and the host's cores.
// Shm with more ranks than cores (after a run with one rank per core): only what waking a rank
// costs then: host.switch_us, from the 8-byte exchange beyond the file's costs x ranks/cores.
// An existing FILE keeps the keys this run does not measure; it is replaced atomically.
#pragma once

#include "bench.hpp"
#include "options.hpp"

namespace weft::perf {

// Returns the exit status (0, or 1 after a message when FILE cannot be read or written).
int runCalibration(const Options& options, const RankSetup& setup);

}  // namespace weft::perf
