// Every WEFT_* environment variable is parsed here and nowhere else. Bad values are errors
// (weftInvalidArgument naming the variable), reported when a communicator is created.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace weft {

enum class LogLevel : int { None = 0, Version = 1, Warn = 2, Info = 3, Trace = 4 };

// Log subsystems, a bit each; WEFT_DEBUG_SUBSYS selects them.
enum Subsys : uint32_t {
  kSubsysInit = 1u << 0,
  kSubsysColl = 1u << 1,
  kSubsysTopo = 1u << 2,
  kSubsysTune = 1u << 3,
  kSubsysNet = 1u << 4,
  kSubsysShm = 1u << 5,
  kSubsysBoot = 1u << 6,
  kSubsysEnv = 1u << 7,
  kSubsysAll = 0xffffffffu,
};

struct Env {
  LogLevel debug = LogLevel::Warn;
  uint32_t debugSubsys = kSubsysAll;
  std::string debugFile;        // empty: stderr; %h and %p are expanded when the file is opened
  int64_t timeoutMs = 300000;   // deadline of every wait
  std::string socketIfname;     // empty: first interface that is up, not loopback, else loopback
  int64_t chunkBytes = 0;       // 0: the tuner decides
  bool shmDisable = false;      // no native shared-memory collectives
  bool check = false;           // WEFT_CHECK: ranks compare each operation before running it
  std::string shmMode = "auto"; // auto | staged | cma: how shared-memory collectives move data
  uint64_t shmSlotBytes = 0;    // WEFT_SHM_SLOT_BYTES; 0: defaultSlotBytes decides
  double shmCmaCost = 0;        // WEFT_SHM_CMA_COST; 0: the ranks measure it (cma_cost.hpp)
  bool shmSpread = true;        // WEFT_SHM_SPREAD: crowded ranks move to freer CPUs
  bool shmTune = true;          // WEFT_SHM_TUNE: time staging against CMA (path_trials.hpp)
  int shmCores = 0;             // WEFT_SHM_CORES; 0: the local ranks' affinity masks decide
  int netChannels = 1;          // WEFT_NET_CHANNELS: UCX endpoints per peer on another host
  // Checked by the tuner (lib/tuner/algo_selection.hpp), which knows the algorithm names.
  std::string algo;             // WEFT_ALGO: which algorithms the tuner may choose, per collective
  std::string tuneFile;         // WEFT_TUNE_FILE: link parameters for the cost model
  std::string hostId;           // WEFT_HOST_ID: replaces the host identity (lib/bootstrap/host_id)
  std::string topoFile;         // WEFT_TOPO_FILE: hwloc XML instead of this machine
  std::string topoSynthetic;    // WEFT_TOPO_SYNTHETIC: hwloc synthetic string instead
  std::string topoDumpFile;     // WEFT_TOPO_DUMP_FILE: where rank 0 writes the merged picture
};

// One row of the table of variables (README.md lists the same rows; a test checks).
struct EnvVar {
  const char* name;
  const char* defaultValue;
  const char* description;
};
// Every variable weft reads: this file's and launch_env.hpp's.
std::vector<EnvVar> envVariables();
// This file's own rows.
std::span<const EnvVar> runtimeVariables();

// Pure parser: `get` returns the value of a variable or nullptr. Throws Error on a bad value.
Env parseEnv(const std::function<const char*(const char*)>& get);

// The process environment, parsed once. Throws the parse error (every call, not only the first).
const Env& env();
// Same, without throwing: a default Env when the environment is bad (for logging).
const Env& envOrDefaults();

// Parses "WARN", "INFO", ... (case-insensitive); nullopt for anything else.
std::optional<LogLevel> parseLogLevel(const std::string& text);
// Parses "INIT,COLL" or "^NET" (everything but NET); throws Error on an unknown name.
uint32_t parseSubsystems(const std::string& text);

}  // namespace weft
