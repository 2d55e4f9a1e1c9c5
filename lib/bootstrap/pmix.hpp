// The launcher's PMIx server (mpirun's orted, slurmstepd with --mpi=pmix, prterun) as the
// channel for the unique id: rank 0 puts it, every process fences, the others get it. A plain
// weft program therefore runs under `mpirun -np 4 ./prog` without calling MPI.
//
// libpmix.so.2 is loaded at run time (dlopen), so libweft does not depend on it; the headers
// come from libpmix-dev at build time (without them, PMIx support is compiled out and says so).
// PMIx is initialised once per process and finalised at exit: it cannot be initialised again
// after PMIx_Finalize (the second fence hangs), and Open MPI's mpirun reports a process that
// initialised PMIx and exited without finalising as failed. When the program is also an MPI
// program, MPI and weft share the one PMIx client (its initialisation is reference-counted).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace weft {

struct PmixJob {
  std::string nspace;
  int rank = 0;
  int size = 0;
  std::optional<int> localRank, localSize;
};

// Whether this build can talk PMIx at all (libpmix-dev was found).
bool pmixCompiledIn();

// Connects on first use. Throws weftSystemError when libpmix.so.2 cannot be loaded or PMIx_Init
// fails (the message says which, and what the launcher set).
PmixJob pmixJob();

// Collective over every process of the PMIx job: `root` publishes `value` under `key`, all fence
// (at most timeoutMs), and every process returns root's value. Throws weftTimeout when the fence
// times out (a process of the job did not take part), weftSystemError for other PMIx failures.
std::vector<uint8_t> pmixBroadcast(std::string_view key, std::span<const uint8_t> value, int root,
                                   int64_t timeoutMs);

}  // namespace weft
