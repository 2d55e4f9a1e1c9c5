// The tuner: which algorithm, chunk size and number of channels a collective runs with.
//
// Single-host communicators use the native shared-memory collectives (algorithms/shm) unless
// WEFT_ALGO or a test rules them out; the cost model prices schedules only. Otherwise every
// algorithm WEFT_ALGO allows is replayed by the cost model (lib/tuner/search.hpp) on this
// communicator's shape (ranks, ranks per host, the links of its transport, from WEFT_TUNE_FILE
// or defaults) and the cheapest wins. Decisions are cached per (collective, size bucket,
// datatype): a bucket is a power of two of bytes, priced at its lower bound. Every rank decides
// from the same inputs with the same arithmetic, so every rank makes the same choice (given the
// same WEFT_ALGO and tuning file everywhere).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string_view>
#include <tuple>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/cost/tune_file.hpp"
#include "lib/tuner/algo_selection.hpp"
#include "lib/tuner/search.hpp"

namespace weft {

// What a caller can force instead of the tuner's choice (tests).
struct TunerOverrides {
  std::array<const Algorithm*, kNumCollectives> algorithm{};
  uint64_t chunkBytes = 0;  // 0: the tuner decides
  int channels = 1;         // with a forced algorithm
};

struct TunerChoice {
  const Algorithm* algorithm = nullptr;  // null: the native shared-memory collective
  uint64_t chunkBytes = 0;
  int channels = 1;
  double predictedSeconds = -1;  // -1: not priced (native, forced, or one rank)
};

// The process's tuning inputs from the environment, read once: WEFT_ALGO, WEFT_TUNE_FILE,
// WEFT_CHUNK_BYTES. Throws their error (every call) when one is bad.
struct TunerSettings {
  AlgoSelection selection;
  MachineParams machine;
  uint64_t chunkBytes = 0;
};
const TunerSettings& tunerSettings();

inline constexpr uint64_t kDefaultChunkBytes = uint64_t{512} << 10;

// The size at which the machine's size-dependent rates are read (MachineParams::atSize) for a
// call of `bytes` (count x element): the largest buffer a rank of the collective touches,
// times ranksPerHost / params.cores when the cores are known (calibration ran one rank per
// core, and the host's ranks share its caches and memory).
uint64_t footprintBytes(Collective collective, uint64_t bytes, int nranks, int ranksPerHost,
                        const MachineParams& params);

// How much slower a host's ranks run than with a core each: ranksPerHost / params.cores when
// the host has fewer cores than ranks (host.cores in the tuning file), else 1.
double oversubscription(const MachineParams& params, int ranksPerHost);

// The machine the cost model sees for a communicator: `transport` is its transport's name
// (shm: weft's shared memory; ucx: UCX, between hosts when ranksPerHost < nranks). Rates and
// per-message costs are scaled by oversubscription(), and both latencies (intra-host and
// between hosts) then also gain params.switchUs.
MachineModel machineFor(const MachineParams& params, int nranks, int ranksPerHost,
                        std::string_view transport, weftDataType_t datatype);

class Tuner {
 public:
  // Throws (weftInvalidArgument) when WEFT_ALGO or WEFT_TUNE_FILE is bad: at communicator init.
  Tuner(int nranks, int ranksPerHost);
  // For tools and tests: explicit settings instead of the environment.
  Tuner(int nranks, int ranksPerHost, TunerSettings settings);

  // Not thread-safe: a communicator's operations run one at a time.
  TunerChoice choose(Collective collective, uint64_t bytes, weftDataType_t datatype,
                     const TunerOverrides& overrides, bool nativeAvailable,
                     std::string_view transport);

  // Whether choose() picks the native shared-memory collective: it depends on the settings and
  // overrides only, so unlike choose() it may be asked from any thread.
  bool choosesNative(Collective collective, const TunerOverrides& overrides,
                     bool nativeAvailable) const;

  // Every allowed algorithm priced for one size (weft-topo --tuning).
  std::vector<Candidate> price(Collective collective, uint64_t bytes, weftDataType_t datatype,
                               std::string_view transport) const;
  const TunerSettings& settings() const { return settings_; }
  int nranks() const { return nranks_; }
  int ranksPerHost() const { return ranksPerHost_; }

 private:
  std::vector<const Algorithm*> allowed(Collective collective) const;

  int nranks_, ranksPerHost_;
  TunerSettings settings_;
  using Key = std::tuple<Collective, int, weftDataType_t>;
  std::map<Key, TunerChoice> decisions_;
};

// log2 of the bucket holding `bytes` (0 for 0 and 1).
int sizeBucket(uint64_t bytes);

}  // namespace weft
