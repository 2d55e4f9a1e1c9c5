#include "lib/base/log.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <string>

namespace weft {
namespace {

const char* levelName(LogLevel level) {
  switch (level) {
    case LogLevel::Version: return "VERSION";
    case LogLevel::Warn: return "WARN";
    case LogLevel::Info: return "INFO";
    case LogLevel::Trace: return "TRACE";
    default: return "";
  }
}

std::string hostName() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

// Expands %h (host) and %p (pid) in WEFT_DEBUG_FILE.
std::string expandPath(const std::string& pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      if (pattern[i + 1] == 'h') { out += hostName(); ++i; continue; }
      if (pattern[i + 1] == 'p') { out += std::to_string(getpid()); ++i; continue; }
    }
    out += pattern[i];
  }
  return out;
}

struct Sink {
  std::mutex mutex;
  FILE* file = nullptr;
  std::string host;

  Sink() : host(hostName()) {
    const std::string& path = envOrDefaults().debugFile;
    if (!path.empty()) file = std::fopen(expandPath(path).c_str(), "a");
    if (!file) file = stderr;
  }
};

Sink& sink() {
  static Sink* s = new Sink();  // never destroyed: threads may log during exit
  return *s;
}

}  // namespace

bool logEnabled(LogLevel level, uint32_t subsys) noexcept {
  static const Env& e = envOrDefaults();
  return level <= e.debug && (e.debugSubsys & subsys) != 0;
}

void logWrite(LogLevel level, uint32_t, std::string_view message) noexcept {
  try {
    Sink& s = sink();
    const long tid = syscall(SYS_gettid);
    std::lock_guard lock(s.mutex);
    fmt::print(s.file, "{}:{}:{} WEFT {} {}\n", s.host, getpid(), tid, levelName(level), message);
    std::fflush(s.file);
  } catch (...) {
    // Logging never throws.
  }
}

}  // namespace weft
