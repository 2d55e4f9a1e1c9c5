// weft-sim's command line: the machine (ranks, ranks per host, the two link classes and the
// per-byte costs), the collective and nccl-tests' size sweep flags. Pure: parseOptions returns
// the options or throws UsageError with a message for the user (main exits 2).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "algorithms/cost/simulator.hpp"
#include "include/weft.h"

namespace weft::sim {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  int ranks = 8;
  int ranksPerHost = 0;  // 0: every rank on one host
  LinkParams intra{1, 200};
  LinkParams inter{5, 25, 5};  // msg: one latency of sender CPU, as the tuner's default
  double reduceGBps = 0;  // 0: the tuning file's (or built-in) value
  double copyGBps = 0;
  std::string tuneFile;  // --tune-file: link and per-byte costs from a calibration
  std::string algo;      // --algo: WEFT_ALGO syntax, limits the algorithms shown
  // --transport: the link class between ranks of a host: shm (weft's shared memory, which weft
  // runs on one host and beside UCX across hosts) or ucx (UCX everywhere, as with
  // WEFT_SHM_DISABLE=1). Empty: shm. It matters with a tuning file, which prices the two classes
  // apart.
  std::string transport;
  double cores = -1;  // --cores: cores per host (host.cores); -1: the tuning file's
  Collective collective = Collective::AllReduce;
  uint64_t minBytes = 8, maxBytes = 8;
  double stepFactor = 2;
  weftDataType_t datatype = weftFloat32;
  bool json = false;
  bool help = false;
  bool intraSet = false, interSet = false;
  // --topo FILE: instead of a sweep, the GPU plan on an hwloc XML host (lib/topology/plan.hpp):
  // packed trees and best ring for broadcast and allreduce, against the max-flow bound.
  std::string topoFile;
  std::vector<int> gpus;  // --gpus 0,1,4: cudaN indexes (default: every GPU)
  int root = 0;           // --root: broadcast root rank
};

Options parseOptions(const std::vector<std::string>& args);
std::string usage();

// "lat=1us,bw=200GB/s" (lat in ns, us, ms or s; bw in B/s, KB/s, MB/s, GB/s, TB/s or Gbit/s).
LinkParams parseLink(const std::string& flag, const std::string& text);
// 8, 64K, 1M, 2G (powers of 1024); throws UsageError naming `flag`.
uint64_t parseSize(const std::string& flag, const std::string& text);

}  // namespace weft::sim
