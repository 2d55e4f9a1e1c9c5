// The one exception type weft's internals throw. It carries the weftResult_t the C boundary
// (lib/api) returns and a message with context: which rank, which operation, what was expected.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "include/weft.h"

namespace weft {

class Error : public std::runtime_error {
 public:
  Error(weftResult_t result, std::string message)
      : std::runtime_error(std::move(message)), result_(result) {}
  weftResult_t result() const noexcept { return result_; }

 private:
  weftResult_t result_;
};

// Throws Error(result, formatted message).
template <class... Args>
[[noreturn]] void fail(weftResult_t result, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(result, fmt::format(format, std::forward<Args>(args)...));
}

// Throws weftSystemError with the text of errno appended: "connect to 10.0.0.1:5000: Connection
// refused".
[[noreturn]] void failErrno(int err, const std::string& what);

const char* resultName(weftResult_t result) noexcept;

}  // namespace weft

namespace weft {
// The result of operations interrupted by weftCommAbort (weft.h has no "aborted" code): the
// caller used a communicator that it aborted. Messages say "aborted".
inline constexpr weftResult_t kAbortedResult = weftInvalidUsage;
}  // namespace weft
