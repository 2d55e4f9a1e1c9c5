// A communicator's settings: weftConfig_t checked and completed with defaults from the
// environment.
#pragma once

#include <cstdint>
#include <string>

#include "include/weft.h"

namespace weft {

struct CommConfig {
  bool blocking = true;
  int64_t timeoutMs = 300000;
  std::string name;        // shown in log lines; may be empty
  std::string netName = "ucx";
  // weftConfig_t::splitShare: children of weftCommSplit share this communicator's UCX worker.
  bool splitShare = false;
};

// Validates `config` (may be null: all defaults) and fills what it leaves unset. Throws
// weftInvalidArgument naming the field, or the parse error of a bad WEFT_* variable.
CommConfig resolveConfig(const weftConfig_t* config);

}  // namespace weft
