#include "lib/comm/config.hpp"

#include "lib/base/env.hpp"
#include "lib/base/error.hpp"

namespace weft {

CommConfig resolveConfig(const weftConfig_t* config) {
  CommConfig out;
  out.timeoutMs = env().timeoutMs;  // throws when a WEFT_* variable is bad
  if (config == nullptr) return out;
  if (config->magic != WEFT_CONFIG_MAGIC || config->size < sizeof(weftConfig_t))
    fail(weftInvalidArgument,
         "config: not initialised with WEFT_CONFIG_INITIALIZER (size {}, magic {:#x})",
         config->size, config->magic);
  if (config->blocking != WEFT_CONFIG_UNDEF_INT) {
    if (config->blocking != 0 && config->blocking != 1)
      fail(weftInvalidArgument, "config.blocking={}: expected 0 or 1", config->blocking);
    out.blocking = config->blocking == 1;
  }
  if (config->timeoutMs != WEFT_CONFIG_UNDEF_INT) {
    if (config->timeoutMs <= 0)
      fail(weftInvalidArgument, "config.timeoutMs={}: expected a positive number of ms",
           config->timeoutMs);
    out.timeoutMs = config->timeoutMs;
  }
  if (config->commName != WEFT_CONFIG_UNDEF_PTR) out.name = config->commName;
  if (config->netName != WEFT_CONFIG_UNDEF_PTR) {
    out.netName = config->netName;
    if (out.netName != "ucx")
      fail(weftInvalidArgument, "config.netName='{}': the only network is \"ucx\"", out.netName);
  }
  if (config->splitShare != WEFT_CONFIG_UNDEF_INT && config->splitShare != 0 &&
      config->splitShare != 1)
    fail(weftInvalidArgument, "config.splitShare={}: expected 0 or 1", config->splitShare);
  out.splitShare = config->splitShare == 1;
  return out;
}

}  // namespace weft
