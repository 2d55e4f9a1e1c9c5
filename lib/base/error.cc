#include "lib/base/error.hpp"

#include <cstring>

namespace weft {

void failErrno(int err, const std::string& what) {
  char buf[256];
  // GNU strerror_r returns the message pointer, which may or may not be buf.
  const char* text = strerror_r(err, buf, sizeof buf);
  throw Error(weftSystemError, fmt::format("{}: {}", what, text));
}

const char* resultName(weftResult_t result) noexcept {
  switch (result) {
    case weftSuccess: return "no error";
    case weftUnhandledCudaError: return "unhandled cuda error";
    case weftSystemError: return "unhandled system error";
    case weftInternalError: return "internal error";
    case weftInvalidArgument: return "invalid argument";
    case weftInvalidUsage: return "invalid usage";
    case weftRemoteError: return "remote process exited or there was a network error";
    case weftInProgress: return "operation in progress";
    case weftTimeout: return "operation timed out";
    default: return "unknown result code";
  }
}

}  // namespace weft
