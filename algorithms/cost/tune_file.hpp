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
// Unknown keys and malformed lines are errors that name the file and line.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "algorithms/cost/simulator.hpp"
#include "include/weft.h"

namespace weft {

enum class LinkClass { Shm, Ucx, Net };
const char* linkClassName(LinkClass c) noexcept;

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
  std::string source = "built-in defaults";

  const LinkParams& link(LinkClass c) const;
  double reduceRate(weftDataType_t type) const;
};

// `name` names the text in error messages (the path).
MachineParams parseTuneFile(std::string_view text, const std::string& name);
// Throws Error(weftInvalidArgument) naming WEFT_TUNE_FILE when the file cannot be read or parsed.
MachineParams loadTuneFile(const std::string& path);
std::string formatTuneFile(const MachineParams& params);

}  // namespace weft
