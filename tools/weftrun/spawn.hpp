// Starting one rank: its environment, fork and exec, and the report of an exec that failed.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "lib/bootstrap/socket.hpp"  // Fd

namespace weft::run {

// The rank's environment: weftrun's own, less any WEFT_* launch variables it inherited (a
// weftrun inside a rank of another job), plus this rank's.
std::vector<std::string> rankEnvironment(const char* const* inherited, const std::string& idHex,
                                         int rank, int nranks);

struct SpawnRequest {
  int rank = 0;
  std::string program;      // as the user wrote it, for messages
  std::string programPath;  // what to exec
  std::vector<std::string> args;
  std::vector<std::string> environment;
  bool captureOutput = false;  // stdout and stderr into pipes (--tag-output)
  bool stdinFromNull = false;  // weftrun's stdin is a terminal the rank could not read
  int cpu = -1;                // the CPU the rank is bound to; -1: weftrun's own mask
};

struct RankProcess {
  pid_t pid = -1;
  Fd stdoutPipe;  // read ends, non-blocking; invalid without captureOutput
  Fd stderrPipe;
};

struct SpawnResult {
  RankProcess process;      // pid -1 when the rank could not be started
  std::string error;        // "rank 1: cannot run 'prog': Exec format error"
  bool execFailed = false;  // the program itself could not be run (not weftrun's resources)
};

// Forks and execs one rank. The child leads a process group of its own (signals for the rank
// reach what it starts, and the terminal's reach only weftrun, which forwards them once), dies
// with weftrun (PR_SET_PDEATHSIG), starts with no blocked signals and default SIGPIPE, and
// reports a failed exec back through a close-on-exec pipe; such a child is reaped here.
// Returns once the child has exec'd or failed. Never throws.
SpawnResult spawnRank(const SpawnRequest& request);

}  // namespace weft::run
