#include "tools/weftrun/spawn.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string_view>

namespace weft::run {
namespace {

constexpr std::string_view kLaunchVariables[] = {"WEFT_UNIQUE_ID", "WEFT_RANK", "WEFT_NRANKS",
                                                 "WEFT_LOCAL_RANK", "WEFT_LOCAL_SIZE"};

bool isLaunchVariable(std::string_view entry) {
  for (std::string_view name : kLaunchVariables)
    if (entry.size() > name.size() && entry.substr(0, name.size()) == name &&
        entry[name.size()] == '=')
      return true;
  return false;
}

// What the child tells the parent when it cannot exec: which step failed, and errno.
enum class ChildStep : int { kProcessGroup = 1, kDeathSignal, kRedirect, kAffinity, kExec };
struct ChildFailure {
  ChildStep step;
  int error;
};

std::vector<char*> pointers(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

[[noreturn]] void reportAndExit(int errorFd, ChildStep step) {
  const ChildFailure f{step, errno};
  [[maybe_unused]] ssize_t n = ::write(errorFd, &f, sizeof f);
  ::_exit(127);
}

// Between fork and exec of a multithreaded parent: async-signal-safe calls only.
[[noreturn]] void runChild(pid_t parent, int errorFd, int outFd, int errFd, bool stdinFromNull,
                           const cpu_set_t* cpus, const char* path, char* const* argv,
                           char* const* envp) {
  auto failed = [errorFd](ChildStep step) { reportAndExit(errorFd, step); };
  if (::setpgid(0, 0) != 0) failed(ChildStep::kProcessGroup);
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) failed(ChildStep::kDeathSignal);
  if (::getppid() != parent) ::_exit(127);  // weftrun died before the line above took effect
  if (outFd >= 0 && (::dup2(outFd, STDOUT_FILENO) < 0 || ::dup2(errFd, STDERR_FILENO) < 0))
    failed(ChildStep::kRedirect);
  if (stdinFromNull) {
    const int null = ::open("/dev/null", O_RDONLY);
    if (null < 0 || ::dup2(null, STDIN_FILENO) < 0) failed(ChildStep::kRedirect);
    ::close(null);
  }
  if (cpus && ::sched_setaffinity(0, sizeof *cpus, cpus) != 0) failed(ChildStep::kAffinity);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGPIPE, &dfl, nullptr);  // weftrun ignores it; the program gets the default
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(path, argv, envp);
  reportAndExit(errorFd, ChildStep::kExec);
}

std::string describe(const SpawnRequest& r, const ChildFailure& f) {
  switch (f.step) {
    case ChildStep::kProcessGroup:
      return fmt::format("rank {}: cannot make its process group: {}", r.rank,
                         std::strerror(f.error));
    case ChildStep::kDeathSignal:
      return fmt::format("rank {}: cannot set the parent-death signal: {}", r.rank,
                         std::strerror(f.error));
    case ChildStep::kRedirect:
      return fmt::format("rank {}: cannot redirect its standard streams: {}", r.rank,
                         std::strerror(f.error));
    case ChildStep::kAffinity:
      return fmt::format("rank {}: cannot bind to CPU {}: {}", r.rank, r.cpu,
                         std::strerror(f.error));
    case ChildStep::kExec: break;
  }
  return fmt::format("rank {}: cannot run '{}': {}", r.rank, r.program, std::strerror(f.error));
}

bool makePipe(Fd& readEnd, Fd& writeEnd) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  readEnd.reset(fds[0]);
  writeEnd.reset(fds[1]);
  return true;
}

}  // namespace

std::vector<std::string> rankEnvironment(const char* const* inherited, const std::string& idHex,
                                         int rank, int nranks) {
  std::vector<std::string> env;
  for (const char* const* e = inherited; e != nullptr && *e != nullptr; ++e)
    if (!isLaunchVariable(*e)) env.emplace_back(*e);
  env.push_back("WEFT_UNIQUE_ID=" + idHex);
  env.push_back(fmt::format("WEFT_RANK={}", rank));
  env.push_back(fmt::format("WEFT_NRANKS={}", nranks));
  env.push_back(fmt::format("WEFT_LOCAL_RANK={}", rank));  // one host: local = global
  env.push_back(fmt::format("WEFT_LOCAL_SIZE={}", nranks));
  return env;
}

SpawnResult spawnRank(const SpawnRequest& request) {
  SpawnResult result;
  auto systemError = [&](const char* what) {
    result.error =
        fmt::format("rank {}: cannot start: {}: {}", request.rank, what, std::strerror(errno));
    return std::move(result);
  };
  Fd errorRead, errorWrite, outRead, outWrite, errRead, errWrite;
  if (!makePipe(errorRead, errorWrite)) return systemError("pipe");
  if (request.captureOutput && (!makePipe(outRead, outWrite) || !makePipe(errRead, errWrite)))
    return systemError("pipe");

  const std::vector<char*> argv = pointers(request.args);
  const std::vector<char*> envp = pointers(request.environment);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (request.cpu >= 0) CPU_SET(request.cpu, &cpus);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return systemError("fork");
  if (pid == 0)
    runChild(parent, errorWrite.get(), outWrite.get(), errWrite.get(), request.stdinFromNull,
             request.cpu >= 0 ? &cpus : nullptr, request.programPath.c_str(), argv.data(),
             envp.data());

  errorWrite.reset();
  outWrite.reset();
  errWrite.reset();
  ChildFailure failure{};
  ssize_t n;
  do {
    n = ::read(errorRead.get(), &failure, sizeof failure);  // EOF: the exec happened
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof failure)) {
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.error = describe(request, failure);
    result.execFailed = failure.step == ChildStep::kExec;
    return result;
  }
  for (Fd* fd : {&outRead, &errRead})
    if (fd->valid()) ::fcntl(fd->get(), F_SETFL, ::fcntl(fd->get(), F_GETFL) | O_NONBLOCK);
  result.process.pid = pid;
  result.process.stdoutPipe = std::move(outRead);
  result.process.stderrPipe = std::move(errRead);
  return result;
}

}  // namespace weft::run
