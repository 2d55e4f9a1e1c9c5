#include "tools/weftrun/options.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace weft::run {
namespace {

constexpr int kMaxRanks = 65536;  // far beyond one host; catches typos before a fork storm

int parseRankCount(std::string_view text) {
  const std::string s(text);
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != 0 || errno != 0)
    throw UsageError(fmt::format("-n '{}': not a number of ranks", s));
  if (value < 1) throw UsageError(fmt::format("-n {}: at least one rank is needed", s));
  if (value > kMaxRanks)
    throw UsageError(fmt::format("-n {}: more than {} ranks on one host", s, kMaxRanks));
  return static_cast<int>(value);
}

double parseTimeout(std::string_view text) {
  const std::string s(text);
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != 0 || errno != 0 || !std::isfinite(value) || value <= 0 || value > 1e9)
    throw UsageError(fmt::format("--timeout '{}': expected a positive number of seconds", s));
  return value;
}

// "--name=value" or "--name value": the value, advancing i past what was consumed.
std::string_view optionValue(std::string_view arg, std::string_view name, int argc,
                             const char* const* argv, int& i) {
  if (arg.size() > name.size() && arg[name.size()] == '=') return arg.substr(name.size() + 1);
  if (i + 1 >= argc) throw UsageError(fmt::format("{} needs a value", name));
  return argv[++i];
}

bool isOption(std::string_view arg, std::string_view name) {
  return arg == name || (arg.size() > name.size() && arg.substr(0, name.size()) == name &&
                         arg[name.size()] == '=');
}

bool isExecutableFile(const std::string& path, int& why) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    why = errno;
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    why = EISDIR;
    return false;
  }
  if (!S_ISREG(st.st_mode) || ::access(path.c_str(), X_OK) != 0) {
    why = EACCES;
    return false;
  }
  return true;
}

}  // namespace

std::string resolveProgram(const std::string& program, const char* path) {
  if (program.empty()) throw UsageError("the program name is empty");
  int why = 0;
  if (program.find('/') != std::string::npos) {
    if (isExecutableFile(program, why)) return program;
    throw UsageError(fmt::format("cannot run '{}': {}", program, std::strerror(why)));
  }
  // As execvp: an empty PATH entry means the current directory; no PATH means the default.
  const std::string dirs = path != nullptr ? path : "/bin:/usr/bin";
  int firstFailure = 0;  // a candidate that exists but cannot be run is worth naming
  size_t start = 0;
  while (true) {
    const size_t colon = dirs.find(':', start);
    std::string dir = dirs.substr(start, colon == std::string::npos ? colon : colon - start);
    const std::string candidate = dir.empty() ? program : dir + "/" + program;
    if (isExecutableFile(candidate, why)) return dir.empty() ? "./" + program : candidate;
    if (why != ENOENT && why != ENOTDIR && firstFailure == 0) firstFailure = why;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (firstFailure != 0)
    throw UsageError(fmt::format("cannot run '{}': {}", program, std::strerror(firstFailure)));
  throw UsageError(fmt::format("cannot run '{}': not found in PATH", program));
}

LaunchOptions parseOptions(int argc, const char* const* argv) {
  LaunchOptions o;
  bool haveRanks = false;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.empty() || arg[0] != '-') break;  // the program: the rest is its own
    if (arg == "-h" || arg == "--help") {
      o.help = true;
      return o;
    } else if (arg == "-n" || arg == "-np" || isOption(arg, "--nranks")) {
      const std::string_view value = arg[1] == '-' ? optionValue(arg, "--nranks", argc, argv, i)
                                                   : optionValue(arg, arg, argc, argv, i);
      o.nranks = parseRankCount(value);
      haveRanks = true;
    } else if (arg.size() > 2 && arg.substr(0, 2) == "-n" && arg[2] != 'p') {
      o.nranks = parseRankCount(arg.substr(2));  // -n4
      haveRanks = true;
    } else if (arg == "--tag-output") {
      o.tagOutput = true;
    } else if (arg == "--keep-going") {
      o.keepGoing = true;
    } else if (isOption(arg, "--bind-to")) {
      const std::string_view value = optionValue(arg, "--bind-to", argc, argv, i);
      if (value == "core")
        o.bindTo = Binding::Core;
      else if (value == "none")
        o.bindTo = Binding::None;
      else
        throw UsageError(fmt::format("--bind-to {}: expected core or none", value));
    } else if (isOption(arg, "--timeout")) {
      const std::string_view value = optionValue(arg, "--timeout", argc, argv, i);
      o.timeoutSeconds = parseTimeout(value);
      o.timeoutText = std::string(value);
    } else {
      throw UsageError(fmt::format("unknown option '{}'", arg));
    }
  }
  if (!haveRanks) throw UsageError("missing -n N: how many ranks to start");
  if (i >= argc) throw UsageError("no program to run");
  o.program = argv[i];
  o.programPath = resolveProgram(o.program, std::getenv("PATH"));
  o.args.assign(argv + i, argv + argc);
  return o;
}

std::string usageText() {
  return "usage: weftrun -n N [options] [--] program [args...]\n"
         "\n"
         "Starts N processes of program on this host as the ranks of one weft job: each gets\n"
         "WEFT_UNIQUE_ID, WEFT_RANK, WEFT_NRANKS, WEFT_LOCAL_RANK and WEFT_LOCAL_SIZE, which\n"
         "weftCommInitFromEnv reads. weftrun hosts the job's rendezvous root itself.\n"
         "\n"
         "options:\n"
         "  -n N, -np N, --nranks N  number of ranks to start (required, at least 1)\n"
         "  --tag-output             prefix each line a rank prints with \"[rank] \"\n"
         "  --timeout SEC            stop the job if it still runs after SEC seconds (exit 124)\n"
         "  --keep-going             when a rank fails, let the others finish; report every rank\n"
         "  --bind-to core|none      pin rank i to the i-th of weftrun's CPUs, round-robin\n"
         "                           (core), or leave every rank weftrun's mask (none, default)\n"
         "  -h, --help               print this help\n"
         "\n"
         "When a rank fails, weftrun names it, sends SIGTERM to the other ranks (SIGKILL 5 s\n"
         "later) and exits with that rank's status (128+signal if it was killed). SIGINT,\n"
         "SIGTERM and SIGHUP are forwarded to the ranks (SIGKILL 5 s later); a second one\n"
         "kills them at once. Each rank leads its own process group, which signals reach.\n"
         "\n"
         "exit status: 0 every rank exited 0; the first failing rank's status or 128+signal;\n"
         "  2 bad usage or the program cannot be run; 124 timeout; 128+signal when weftrun\n"
         "  itself was interrupted by that signal; 1 weftrun could not start the job.\n";
}

}  // namespace weft::run
