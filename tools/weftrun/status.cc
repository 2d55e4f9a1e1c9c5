#include "tools/weftrun/status.hpp"

#include <fmt/format.h>
#include <sys/wait.h>

#include <csignal>
#include <cstring>

namespace weft::run {

bool rankFailed(int waitStatus) {
  return !WIFEXITED(waitStatus) || WEXITSTATUS(waitStatus) != 0;
}

std::string describeWaitStatus(int waitStatus) {
  if (WIFEXITED(waitStatus)) return fmt::format("exited with status {}", WEXITSTATUS(waitStatus));
  if (WIFSIGNALED(waitStatus)) {
    const int sig = WTERMSIG(waitStatus);
    const char* name = ::strsignal(sig);
    std::string text =
        fmt::format("was killed by signal {} ({})", sig, name != nullptr ? name : "unknown signal");
    if (WCOREDUMP(waitStatus)) text += " (core dumped)";
    return text;
  }
  return fmt::format("ended with wait status {:#x}", waitStatus);
}

int exitCodeFor(int waitStatus) {
  if (WIFEXITED(waitStatus)) return WEXITSTATUS(waitStatus);
  if (WIFSIGNALED(waitStatus)) return 128 + WTERMSIG(waitStatus);
  return 1;
}

std::string signalLabel(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return fmt::format("signal {}", signal);
  }
}

}  // namespace weft::run
