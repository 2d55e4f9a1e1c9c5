// The command line: nccl-tests' flags, parsed into Options without touching weft.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collective.hpp"
#include "datatypes.hpp"

namespace weft::perf {

// How per-rank times combine into the reported one (nccl-tests' -a).
enum class TimeCombine { Rank0 = 0, Average = 1, Min = 2, Max = 3 };

inline constexpr uint64_t kDefaultBytes = uint64_t{32} << 20;  // nccl-tests' default -b and -e

struct Options {
  Collective collective = Collective::AllReduce;
  uint64_t minBytes = kDefaultBytes;
  uint64_t maxBytes = kDefaultBytes;
  uint64_t stepFactor = 2;  // used when stepBytes == 0
  uint64_t stepBytes = 0;   // -i: add this many bytes between sizes instead of multiplying
  int iters = 20;
  int warmupIters = 1;
  int checkIters = 1;  // 0: no verification
  std::vector<weftDataType_t> datatypes{weftFloat32};
  std::vector<ReduceOp> ops{ReduceOp::Sum};
  int root = 0;
  TimeCombine combine = TimeCombine::Average;
  bool blocking = false;  // -z 1: blocking calls on a NULL stream
  bool registered = false;  // -R 1: buffers from weftMemAlloc, registered (zero copy)
  bool baselineMpi = false;  // --baseline mpi: MPI's collective timed alongside (weft-perf-mpi)
  std::string jsonPath;   // empty: no JSON
  std::string calibratePath;  // --calibrate FILE: measure the cost model's parameters instead
  std::string calibrateLink;  // --link shm|ucx|net (empty: the transport inside this host)
  int threads = 1;
  bool threadsGiven = false;  // -t appeared (it conflicts with a launcher's environment)
};

struct ParseOutcome {
  enum class Kind { Run, Help, Error };
  Kind kind = Kind::Run;
  Options options;
  std::string message;  // Error: what was wrong, one line
};

// args: the command line without the program name.
ParseOutcome parseOptions(std::span<const char* const> args);

// "8", "1K", "64M", "2G" (suffixes k/m/g in either case, powers of 1024). nullopt when the text is
// not such a size or the value does not fit in 64 bits.
std::optional<uint64_t> parseBytes(std::string_view text);

std::string usage(std::string_view program);

}  // namespace weft::perf
