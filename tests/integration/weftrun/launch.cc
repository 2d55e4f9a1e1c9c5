#include "launch.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace weftrun_test {
namespace {

double now() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::vector<std::string> listDir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(d);
  }
  return names;
}

bool isTestChild(pid_t pid) {
  std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
  std::string text((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  return text.find("weftrun-test-child") != std::string::npos;
}

}  // namespace

Weftrun::Weftrun(const std::vector<std::string>& args) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe failed");
  std::vector<std::string> argvStrings{WEFTRUN_PATH};
  argvStrings.insert(argvStrings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argvStrings) argv.push_back(s.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  startedAt_ = now();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a crashed test takes weftrun, and so the ranks, along
    if (::getppid() != parent) ::_exit(126);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    const int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, STDIN_FILENO);
    ::execv(WEFTRUN_PATH, argv.data());
    ::_exit(126);
  }
  ::close(out[1]);
  ::close(err[1]);
  outFd_ = out[0];
  errFd_ = err[0];
}

Weftrun::~Weftrun() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (outFd_ >= 0) ::close(outFd_);
  if (errFd_ >= 0) ::close(errFd_);
}

void Weftrun::signal(int sig) const {
  if (pid_ > 0) ::kill(pid_, sig);
}

Outcome Weftrun::wait() {
  Outcome o;
  const double giveUp = startedAt_ + kSafetySeconds;
  char buffer[4096];
  while (outFd_ >= 0 || errFd_ >= 0) {
    pollfd fds[2] = {{outFd_, POLLIN, 0}, {errFd_, POLLIN, 0}};
    const double left = giveUp - now();
    if (left <= 0) {
      o.timedOut = true;
      ::kill(pid_, SIGKILL);
      break;
    }
    if (::poll(fds, 2, static_cast<int>(left * 1000) + 1) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      int& fd = i == 0 ? outFd_ : errFd_;
      if (fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n > 0) {
        (i == 0 ? o.out : o.err).append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fd);
        fd = -1;
      }
    }
  }
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  o.seconds = now() - startedAt_;
  if (WIFEXITED(status)) o.exitCode = WEXITSTATUS(status);
  return o;
}

Outcome runWeftrun(const std::vector<std::string>& args) {
  return Weftrun(args).wait();
}

ScratchDir::ScratchDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/weftrun-test-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  for (const auto& [rank, pid] : pids())
    if (!processGone(pid) && isTestChild(pid)) ::kill(pid, SIGKILL);  // a test that failed early
  for (const std::string& name : listDir(path_)) ::unlink((path_ + "/" + name).c_str());
  ::rmdir(path_.c_str());
}

std::map<int, pid_t> ScratchDir::pids() const {
  std::map<int, pid_t> out;
  for (const std::string& name : listDir(path_)) {
    int rank = -1;
    char tail[8] = {};
    if (std::sscanf(name.c_str(), "rank%d.%4s", &rank, tail) != 2 || std::strcmp(tail, "pid") != 0)
      continue;
    std::ifstream in(path_ + "/" + name);
    long pid = 0;
    if (in >> pid) out[rank] = static_cast<pid_t>(pid);
  }
  return out;
}

bool ScratchDir::waitForPids(int count) const {
  const double giveUp = now() + kSafetySeconds;
  while (static_cast<int>(pids().size()) < count) {
    if (now() > giveUp) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

bool processGone(pid_t pid) {
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

}  // namespace weftrun_test
