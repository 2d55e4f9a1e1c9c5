#include "tools/weftrun/job.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <vector>

#include "tools/weftrun/binding.hpp"
#include "tools/weftrun/output.hpp"
#include "tools/weftrun/spawn.hpp"
#include "tools/weftrun/status.hpp"

namespace weft::run {
namespace {

using Clock = std::chrono::steady_clock;

struct Rank {
  int rank = 0;
  pid_t pid = -1;  // -1: never started
  bool running = false;
  int waitStatus = 0;
  Fd outPipe, errPipe;  // --tag-output only
  std::optional<LineTagger> outTagger, errTagger;
};

enum class StopReason { kNone, kRankFailed, kTimeout, kInterrupted, kStartFailed };

void say(const std::string& line) {
  writeAll(STDERR_FILENO, "weftrun: " + line + "\n");
}

class Job {
 public:
  explicit Job(const LaunchOptions& options);
  ~Job();  // only when something threw: kills and reaps what still runs
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  int run(const std::string& idHex, const char* const* environment);

 private:
  void start(const std::string& idHex, const char* const* environment);
  void supervise();
  int pollTimeoutMs() const;
  void handleSignals();
  void onInterrupt(int sig);
  void reap();
  void onExit(Rank& r);
  void checkDeadlines();
  void stop(StopReason reason);
  void signalRunning(int sig);
  void readPipe(Rank& r, bool stdoutPipe, bool untilEmpty);
  void drain(Rank& r);
  std::string runningRanks() const;
  void printSummary() const;
  int exitCode() const;

  const LaunchOptions& options_;
  std::vector<Rank> ranks_;
  Fd signalFd_;
  int running_ = 0;
  StopReason stop_ = StopReason::kNone;
  std::optional<Clock::time_point> jobDeadline_;
  std::optional<Clock::time_point> killDeadline_;  // SIGKILL what still runs then
  std::optional<int> firstFailureCode_;
  int interruptSignal_ = 0;
  int startFailureCode_ = 0;
  std::vector<char> buffer_ = std::vector<char>(64 * 1024);
};

Job::Job(const LaunchOptions& options) : options_(options) {
  const sigset_t signals = supervisedSignals();
  signalFd_.reset(::signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!signalFd_.valid())
    throw std::runtime_error(fmt::format("signalfd: {}", std::strerror(errno)));
}

Job::~Job() {
  signalRunning(SIGKILL);
  for (Rank& r : ranks_) {
    if (!r.running) continue;
    while (::waitpid(r.pid, &r.waitStatus, 0) < 0 && errno == EINTR) {
    }
    r.running = false;
  }
}

int Job::run(const std::string& idHex, const char* const* environment) {
  if (options_.timeoutSeconds)
    jobDeadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(*options_.timeoutSeconds));
  start(idHex, environment);
  supervise();
  // Every rank is reaped: what they wrote is in the pipes now. A pipe still open belongs to
  // a process a rank left behind, which weftrun does not wait for.
  for (Rank& r : ranks_) {
    drain(r);
    for (auto* tagger : {&r.outTagger, &r.errTagger})
      if (*tagger) (*tagger)->finish();
    r.outPipe.reset();
    r.errPipe.reset();
  }
  if (options_.keepGoing) printSummary();
  return exitCode();
}

void Job::start(const std::string& idHex, const char* const* environment) {
  ranks_.resize(static_cast<size_t>(options_.nranks));
  // Ranks are not in the terminal's foreground group: reading it would stop them (SIGTTIN).
  const bool stdinIsTerminal = ::isatty(STDIN_FILENO) == 1;
  const std::vector<int> cpus = rankCpus(options_.bindTo, options_.nranks, allowedCpus());
  for (int i = 0; i < options_.nranks; ++i) {
    Rank& r = ranks_[static_cast<size_t>(i)];
    r.rank = i;
    SpawnRequest request;
    request.rank = i;
    request.program = options_.program;
    request.programPath = options_.programPath;
    request.args = options_.args;
    request.environment = rankEnvironment(environment, idHex, i, options_.nranks);
    request.captureOutput = options_.tagOutput;
    request.stdinFromNull = stdinIsTerminal;
    request.cpu = cpus.empty() ? -1 : cpus[static_cast<size_t>(i) % cpus.size()];
    SpawnResult spawned = spawnRank(request);
    if (spawned.process.pid < 0) {
      say(spawned.error + (running_ > 0 ? "; stopping the other ranks" : ""));
      startFailureCode_ = spawned.execFailed ? 2 : 1;
      stop(StopReason::kStartFailed);
      return;
    }
    r.pid = spawned.process.pid;
    r.running = true;
    ++running_;
    if (options_.tagOutput) {
      r.outPipe = std::move(spawned.process.stdoutPipe);
      r.errPipe = std::move(spawned.process.stderrPipe);
      r.outTagger.emplace(i, STDOUT_FILENO);
      r.errTagger.emplace(i, STDERR_FILENO);
    }
  }
}

void Job::supervise() {
  std::vector<pollfd> fds;
  std::vector<std::pair<Rank*, bool>> owners;  // per pipe entry: its rank, stdout or not
  while (running_ > 0) {
    fds.assign(1, pollfd{signalFd_.get(), POLLIN, 0});
    owners.clear();
    for (Rank& r : ranks_) {
      if (r.outPipe.valid()) {
        fds.push_back({r.outPipe.get(), POLLIN, 0});
        owners.emplace_back(&r, true);
      }
      if (r.errPipe.valid()) {
        fds.push_back({r.errPipe.get(), POLLIN, 0});
        owners.emplace_back(&r, false);
      }
    }
    const int ready = ::poll(fds.data(), fds.size(), pollTimeoutMs());
    if (ready < 0 && errno != EINTR)
      throw std::runtime_error(fmt::format("poll: {}", std::strerror(errno)));
    for (size_t i = 1; ready > 0 && i < fds.size(); ++i)
      if (fds[i].revents != 0) readPipe(*owners[i - 1].first, owners[i - 1].second, false);
    if (ready > 0 && fds[0].revents != 0) handleSignals();
    checkDeadlines();
  }
}

int Job::pollTimeoutMs() const {
  std::optional<Clock::time_point> next;
  if (stop_ == StopReason::kNone) next = jobDeadline_;
  if (killDeadline_ && (!next || *killDeadline_ < *next)) next = killDeadline_;
  if (!next) return -1;
  const auto left = *next - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  // Rounded up, so that the loop does not wake just before the deadline and spin.
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return ms > 1'000'000'000 ? 1'000'000'000 : static_cast<int>(ms);
}

void Job::handleSignals() {
  signalfd_siginfo info[16];
  while (true) {
    const ssize_t n = ::read(signalFd_.get(), info, sizeof info);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (size_t i = 0; i < static_cast<size_t>(n) / sizeof info[0]; ++i)
      if (info[i].ssi_signo != SIGCHLD) onInterrupt(static_cast<int>(info[i].ssi_signo));
  }
  reap();  // SIGCHLDs coalesce: look at every rank each time
}

void Job::onInterrupt(int sig) {
  if (running_ == 0) return;
  if (stop_ != StopReason::kNone) {
    say(fmt::format("received {} while stopping; killing ranks {}", signalLabel(sig),
                    runningRanks()));
    signalRunning(SIGKILL);
    killDeadline_.reset();
    return;
  }
  say(fmt::format("received {}; forwarding it to ranks {}", signalLabel(sig), runningRanks()));
  interruptSignal_ = sig;
  stop_ = StopReason::kInterrupted;
  signalRunning(sig);
  killDeadline_ = Clock::now() + std::chrono::milliseconds(kKillGraceMs);
}

void Job::reap() {
  for (Rank& r : ranks_) {
    if (!r.running) continue;
    const pid_t got = ::waitpid(r.pid, &r.waitStatus, WNOHANG);
    if (got == r.pid) onExit(r);
  }
}

void Job::onExit(Rank& r) {
  r.running = false;
  --running_;
  drain(r);  // its last lines come out before anything weftrun says about it
  if (!rankFailed(r.waitStatus)) return;
  if (!firstFailureCode_) firstFailureCode_ = exitCodeFor(r.waitStatus);
  if (options_.keepGoing || stop_ != StopReason::kNone) return;  // expected, or reported later
  say(fmt::format("rank {} (pid {}) {}{}", r.rank, r.pid, describeWaitStatus(r.waitStatus),
                  running_ > 0 ? "; stopping the other ranks" : ""));
  stop(StopReason::kRankFailed);
}

void Job::checkDeadlines() {
  const auto now = Clock::now();
  if (stop_ == StopReason::kNone && jobDeadline_ && now >= *jobDeadline_ && running_ > 0) {
    say(fmt::format("timed out after {} s; ranks still running: {}", options_.timeoutText,
                    runningRanks()));
    stop(StopReason::kTimeout);
  }
  if (killDeadline_ && now >= *killDeadline_) {
    if (running_ > 0)
      say(fmt::format("ranks {} still running {} s after being told to stop; sending SIGKILL",
                      runningRanks(), kKillGraceMs / 1000));
    signalRunning(SIGKILL);
    killDeadline_.reset();
  }
}

void Job::stop(StopReason reason) {
  stop_ = reason;
  signalRunning(SIGTERM);
  killDeadline_ = Clock::now() + std::chrono::milliseconds(kKillGraceMs);
}

void Job::signalRunning(int sig) {
  // A rank not yet reaped keeps its pid, and so its process group: the signal cannot reach
  // anyone else. The group holds what the rank started (a wrapper script's program); a rank
  // that left its group is still signalled itself.
  for (const Rank& r : ranks_)
    if (r.running && ::kill(-r.pid, sig) != 0) ::kill(r.pid, sig);
}

void Job::readPipe(Rank& r, bool stdoutPipe, bool untilEmpty) {
  Fd& pipe = stdoutPipe ? r.outPipe : r.errPipe;
  LineTagger& tagger = stdoutPipe ? *r.outTagger : *r.errTagger;
  while (pipe.valid()) {
    const ssize_t n = ::read(pipe.get(), buffer_.data(), buffer_.size());
    if (n > 0) {
      tagger.feed(std::string_view(buffer_.data(), static_cast<size_t>(n)));
      if (!untilEmpty) return;  // one read per wake-up: a chatty rank does not starve the rest
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    tagger.finish();  // end of stream (or a broken pipe, which ends it too)
    pipe.reset();
  }
}

void Job::drain(Rank& r) {
  if (r.outPipe.valid()) readPipe(r, true, true);
  if (r.errPipe.valid()) readPipe(r, false, true);
}

std::string Job::runningRanks() const {
  std::string list;
  for (const Rank& r : ranks_) {
    if (!r.running) continue;
    if (!list.empty()) list += ", ";
    list += std::to_string(r.rank);
  }
  return list;
}

void Job::printSummary() const {
  for (const Rank& r : ranks_) {
    if (r.pid < 0)
      say(fmt::format("rank {} was not started", r.rank));
    else
      say(fmt::format("rank {} (pid {}) {}", r.rank, r.pid, describeWaitStatus(r.waitStatus)));
  }
}

int Job::exitCode() const {
  switch (stop_) {
    case StopReason::kStartFailed: return startFailureCode_;
    case StopReason::kTimeout: return 124;
    case StopReason::kInterrupted: return 128 + interruptSignal_;
    case StopReason::kNone:
    case StopReason::kRankFailed: break;
  }
  return firstFailureCode_.value_or(0);
}

}  // namespace

sigset_t supervisedSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
  return set;
}

int runJob(const LaunchOptions& options, const std::string& uniqueIdHex,
           const char* const* environment) {
  Job job(options);
  return job.run(uniqueIdHex, environment);
}

}  // namespace weft::run
