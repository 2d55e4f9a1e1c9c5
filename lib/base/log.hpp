// Logging: WEFT_DEBUG selects the level, WEFT_DEBUG_SUBSYS the subsystems, WEFT_DEBUG_FILE the
// destination. A disabled log line costs one load and compare; its arguments are not evaluated.
#pragma once

#include <fmt/format.h>

#include <string_view>

#include "lib/base/env.hpp"

namespace weft {

bool logEnabled(LogLevel level, uint32_t subsys) noexcept;
void logWrite(LogLevel level, uint32_t subsys, std::string_view message) noexcept;

}  // namespace weft

#define WEFT_LOG(level, subsys, ...)                                              \
  do {                                                                            \
    if (::weft::logEnabled(level, subsys))                                        \
      ::weft::logWrite(level, subsys, ::fmt::format(__VA_ARGS__));                \
  } while (0)
#define WEFT_WARN(subsys, ...) WEFT_LOG(::weft::LogLevel::Warn, subsys, __VA_ARGS__)
#define WEFT_INFO(subsys, ...) WEFT_LOG(::weft::LogLevel::Info, subsys, __VA_ARGS__)
#define WEFT_TRACE(subsys, ...) WEFT_LOG(::weft::LogLevel::Trace, subsys, __VA_ARGS__)
