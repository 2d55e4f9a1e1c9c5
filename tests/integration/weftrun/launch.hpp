// Test harness: weftrun started as a real process with its stdout and stderr captured, killed
// (and its ranks with it) whatever happens to the test; scratch directories for pid files.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace weftrun_test {

// A test that has not finished by then is broken: weftrun is killed and the test fails, well
// inside ctest's 120 s limit.
constexpr int kSafetySeconds = 90;

struct Outcome {
  int exitCode = -1;      // weftrun's exit status, or -1 when it did not exit normally
  bool timedOut = false;  // killed by the harness after kSafetySeconds
  std::string out;
  std::string err;
  double seconds = 0;
};

class Weftrun {
 public:
  // Starts weftrun with these arguments (not including weftrun itself).
  explicit Weftrun(const std::vector<std::string>& args);
  ~Weftrun();  // SIGKILL and reap if still running; ranks die with it (PR_SET_PDEATHSIG)
  Weftrun(const Weftrun&) = delete;
  Weftrun& operator=(const Weftrun&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int sig) const;
  // Reads both streams to their end and reaps weftrun.
  Outcome wait();

 private:
  pid_t pid_ = -1;
  int outFd_ = -1;
  int errFd_ = -1;
  double startedAt_ = 0;
};

// Runs weftrun to the end.
Outcome runWeftrun(const std::vector<std::string>& args);

// A fresh directory, removed with what it holds. Ranks write their pid files here; on
// destruction any weftrun-test-child still alive under a recorded pid is killed.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  // rank -> pid, from the rank<R>.pid files written so far.
  std::map<int, pid_t> pids() const;
  // Waits (up to kSafetySeconds) until `count` pid files exist.
  bool waitForPids(int count) const;

 private:
  std::string path_;
};

// True once no process has this pid (reaped, not merely dead).
bool processGone(pid_t pid);

}  // namespace weftrun_test
