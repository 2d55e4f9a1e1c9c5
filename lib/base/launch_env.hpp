// What a launcher tells each rank through the environment: which rank it is, how many there
// are, and where to rendezvous. weftCommInitFromEnv reads it; the README's table lists every
// variable (launchVariables() are its rows).
//
// Launchers are recognised in this order (the first whose variables are present wins;
// WEFT_LAUNCHER names one explicitly):
//   weftrun    WEFT_UNIQUE_ID, WEFT_RANK, WEFT_NRANKS           rendezvous: the id itself
//   torchrun   RANK, WORLD_SIZE with TORCHELASTIC_RUN_ID        rendezvous: weft's store
//              (an elastic worker: torchrun is the innermost launcher, whatever runs it)
//   Open MPI   OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE       rendezvous: PMIx
//   Slurm      SLURM_PROCID, SLURM_STEP_NUM_TASKS/SLURM_NTASKS  rendezvous: PMIx
//   PMIx       PMIX_RANK, PMIX_NAMESPACE (size from PMIx)      rendezvous: PMIx
//   torchrun   RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT       rendezvous: weft's store
// Under Open MPI or Slurm without a PMIx server (no PMIX_RANK/PMIX_NAMESPACE), MASTER_ADDR and
// MASTER_PORT select weft's store instead.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/env.hpp"

namespace weft {

enum class Launcher { kWeftrun, kTorchrun, kOpenMpi, kSlurm, kPmix };
enum class Rendezvous {
  kUniqueId,  // the environment holds the unique id (weftrun)
  kPmix,      // rank 0 publishes the unique id through the launcher's PMIx server
  kStore,     // rank 0 hosts weft's authenticated store at storeHost:storePort
};

// "weftrun", "Open MPI", "Slurm", "PMIx", "torchrun".
const char* launcherName(Launcher launcher);
const char* rendezvousName(Rendezvous rendezvous);

// Read on every call: a process may start several communicators, and tests change the
// environment.
struct LaunchEnv {
  Launcher launcher = Launcher::kWeftrun;
  int rank = 0;
  std::optional<int> nranks;  // nullopt: only PMIx knows (a PMIx launcher without Open MPI's)
  std::optional<int> localRank, localSize;
  Rendezvous rendezvous = Rendezvous::kUniqueId;
  std::string uniqueIdHex;  // kUniqueId
  std::string storeHost;    // kStore: MASTER_ADDR
  uint16_t storePort = 0;   // kStore: WEFT_STORE_PORT, else MASTER_PORT (+1 under torchrun's
                            // agent store, which occupies MASTER_PORT)
  std::optional<std::string> secret;      // WEFT_SECRET
  std::optional<std::string> secretFile;  // WEFT_SECRET_FILE
  // The variables that decided, "OMPI_COMM_WORLD_RANK=1, OMPI_COMM_WORLD_SIZE=4, ...", for
  // log lines and messages.
  std::string evidence;
  // Worth a WARN line when the communicator is created (never an error).
  std::vector<std::string> warnings;
};

// Throws weftInvalidUsage when no launcher is recognised, or when a launcher's variables are
// incomplete or contradict each other (the message lists every launcher variable found), and
// weftInvalidArgument naming the variable when a value is malformed.
LaunchEnv parseLaunchEnv(const std::function<const char*(const char*)>& get);

// Slurm's compressed per-node task counts ("2(x3),1" -> 2, 2, 2, 1), as in
// SLURM_STEP_TASKS_PER_NODE; nullopt when the text is not such a list.
std::optional<std::vector<int>> expandSlurmTaskCounts(std::string_view text);

std::span<const EnvVar> launchVariables();

// The integer in `text`, for variable `name`, in [min, max]; throws weftInvalidArgument naming
// the variable otherwise. (Shared with env.cc.)
int64_t parseInteger(const char* name, const char* text, int64_t min, int64_t max);

}  // namespace weft
