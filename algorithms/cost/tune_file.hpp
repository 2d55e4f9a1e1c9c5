// What the cost model knows about this machine: latency and bandwidth of each kind of link
// ranks talk over, and how fast a rank reduces and copies. Defaults stand in until
// `weft-perf --calibrate` measures them into a tuning file (WEFT_TUNE_FILE).
//
// The file is text, one `key = value` per line, `#` starts a comment:
//   version = 1
//   shm.latency_us = 0.9          # weft's shared-memory transport (one host)
//   shm.bandwidth_gbps = 8.5      # GB/s, 1 GB = 1e9 B, per direction
//   ucx.latency_us = 1.5          # UCX between processes of one host
//   ucx.bandwidth_gbps = 5.7
//   net.latency_us = 5            # UCX between hosts
//   net.bandwidth_gbps = 12.5
//   net.message_us = 5            # sender CPU per message (LinkParams::messageUs); may be 0
//   reduce_gbps = 9.8             # bytes of one operand reduced per second (float32 sum)
//   reduce_gbps.bfloat16 = 3.2    # optional, per datatype (nccl-tests names)
//   copy_gbps = 12
//   host.cores = 2                # CPU cores the ranks of a host share (0 or absent: a core each;
//                                 # a fraction where hosts share cores, as on the netns test bed)
//   host.switch_us = 3.6          # what waking a rank costs when ranks outnumber cores
//   shm.bandwidth_gbps@65536 = 28 # optional: the rate for operations of this many bytes
// Rates depend on how much memory an operation touches: calibration measures the link
// bandwidths, reduce_gbps and copy_gbps at several sizes (`key@bytes`), and the model takes the
// rate at the collective's size (MachineParams::atSize), interpolated between the points in
// log(bytes) and flat beyond them. A key without points has one rate for every size.
// Unknown keys and malformed lines are errors that name the file and line.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "algorithms/cost/simulator.hpp"
#include "include/weft.h"

namespace weft {

enum class LinkClass { Shm, Ucx, Net };
const char* linkClassName(LinkClass c) noexcept;

// Rate (GB/s) by operation size (bytes): points in increasing size.
struct RateCurve {
  std::vector<std::pair<uint64_t, double>> points;
  // The rate at `bytes`: interpolated in log(bytes) between the points around it, the first or
  // last point's outside them; `flat` when there are no points.
  double at(uint64_t bytes, double flat) const;
  void add(uint64_t bytes, double gbps);  // keeps the points sorted; replaces an equal size
};

struct MachineParams {
  LinkParams shm{0.9, 8.0};
  LinkParams ucx{1.5, 5.0};
  // Between hosts a message costs its sender about one latency of CPU (tcp: system calls and
  // the kernel's stack run on the sender's core), so without a tuning file messageUs is the
  // latency; what 16 KiB chunks cost on the 2x2 test bed is in perf/README.md. On a host,
  // messages are memory copies whose fixed cost the model leaves out (0), as before.
  LinkParams net{5.0, 12.5, 5.0};
  double reduceGBps = 8.0;
  std::array<double, 12> reduceGBpsByType{};  // 0: reduceGBps
  double copyGBps = 10.0;
  // Cores per host. When a host runs more ranks than this, its ranks share them: every CPU cost
  // (copies through shared memory, reductions, per-message work) takes ranks/cores times
  // longer (machineFor in lib/tuner). 0: every rank has a core of its own. A fraction when
  // several hosts share cores: the namespaced hosts of scripts/netns-cluster.sh all run on this
  // machine's cores (4 hosts on 2 cores: 0.5 each).
  double cores = 0;
  // With more ranks than cores, a message often waits for its receiver to be scheduled: added
  // to the latency of every link then, inside the host and between hosts (measured by
  // calibrating with more ranks than cores).
  double switchUs = 0;
  // Size-dependent rates (`key@bytes` lines), for the bandwidth of each link class, reduce_gbps
  // (float32; the other datatypes' rates follow its shape) and copy_gbps.
  std::array<RateCurve, 3> bandwidthCurve;  // indexed by LinkClass
  RateCurve reduceCurve, copyCurve;
  std::string source = "built-in defaults";

  const LinkParams& link(LinkClass c) const;
  double reduceRate(weftDataType_t type) const;
  // These parameters with every curve read at `bytes` into the flat values (and no curves).
  MachineParams atSize(uint64_t bytes) const;
};

// `name` names the text in error messages (the path).
MachineParams parseTuneFile(std::string_view text, const std::string& name);
// Throws Error(weftInvalidArgument) naming WEFT_TUNE_FILE when the file cannot be read or parsed.
MachineParams loadTuneFile(const std::string& path);
std::string formatTuneFile(const MachineParams& params);

}  // namespace weft
