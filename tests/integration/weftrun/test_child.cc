// weftrun-test-child: a rank that does what its arguments say, in order, so that the weftrun
// tests can script every kind of rank behaviour without weft itself.
//
//   env                  print "env rank=R nranks=N local_rank=.. local_size=.. id=.. marker=.."
//   out TEXT | err TEXT  print TEXT and a newline on stdout | stderr ("{rank}" becomes the rank)
//   partial TEXT         print TEXT on stdout with no newline
//   burst N              print N lines on stdout in a single write
//   pidfile DIR          write this process's pid to DIR/rank<R>.pid
//   wait-pidfiles DIR N  wait until DIR holds N pid files (every rank has started)
//   wait-exit DIR R      wait until rank R (per its pid file) is gone
//   sleep SEC            sleep
//   exit N               exit with status N
//   signal N             kill itself with signal N
//   wait-term            wait for SIGTERM, SIGINT or SIGHUP, print "rank R got SIG...", exit 0
//   ignore-term          ignore SIGTERM from now on
//   @R ACTION ...        do ACTION only on rank R
//
// Whatever it prints leaves in one write(2), so that lines of ranks sharing a pipe never mix.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>

namespace {

int g_rank = -1;

std::string envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}

void writeAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) std::_Exit(98);
    done += static_cast<size_t>(n);
  }
}

std::string expand(std::string text) {
  const std::string rank = std::to_string(g_rank);
  for (size_t at = text.find("{rank}"); at != std::string::npos; at = text.find("{rank}", at))
    text.replace(at, 6, rank);
  return text;
}

[[noreturn]] void usage(const std::string& why) {
  writeAll(2, "weftrun-test-child: " + why + "\n");
  std::_Exit(97);
}

int countPidFiles(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  int count = 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name.size() > 4 && name.substr(name.size() - 4) == ".pid") ++count;
  }
  ::closedir(d);
  return count;
}

void writePidFile(const std::string& dir) {
  const std::string path = dir + "/rank" + std::to_string(g_rank) + ".pid";
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) usage("cannot create " + tmp);
  writeAll(fd, std::to_string(::getpid()) + "\n");
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) usage("cannot rename " + tmp);  // atomic
}

sigset_t terminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

int main(int argc, char** argv) {
  g_rank = std::atoi(envOr("WEFT_RANK", "-1").c_str());
  // wait-term must not miss a signal sent as soon as the pid file exists: block from the start.
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "wait-term") == 0) {
      const sigset_t set = terminationSignals();
      ::sigprocmask(SIG_BLOCK, &set, nullptr);
    }

  int onlyRank = -1;  // from a preceding "@R"
  for (int i = 1; i < argc; ++i) {
    const std::string_view action = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(std::string(action) + " needs an argument");
      return argv[++i];
    };
    if (action.size() > 1 && action[0] == '@') {
      onlyRank = std::atoi(argv[i] + 1);
      continue;
    }
    // Arguments are consumed even when the action is skipped.
    std::string a1, a2;
    if (action == "out" || action == "err" || action == "partial" || action == "burst" ||
        action == "pidfile" || action == "sleep" || action == "exit" || action == "signal") {
      a1 = next();
    } else if (action == "wait-pidfiles" || action == "wait-exit") {
      a1 = next();
      a2 = next();
    } else if (action != "env" && action != "wait-term" && action != "ignore-term") {
      usage("unknown action '" + std::string(action) + "'");
    }
    const bool skip = onlyRank >= 0 && onlyRank != g_rank;
    onlyRank = -1;
    if (skip) continue;

    if (action == "env") {
      writeAll(1, "env rank=" + envOr("WEFT_RANK", "-") + " nranks=" + envOr("WEFT_NRANKS", "-") +
                      " local_rank=" + envOr("WEFT_LOCAL_RANK", "-") + " local_size=" +
                      envOr("WEFT_LOCAL_SIZE", "-") + " id=" + envOr("WEFT_UNIQUE_ID", "-") +
                      " marker=" + envOr("WEFTRUN_TEST_MARKER", "-") + "\n");
    } else if (action == "out") {
      writeAll(1, expand(a1) + "\n");
    } else if (action == "err") {
      writeAll(2, expand(a1) + "\n");
    } else if (action == "partial") {
      writeAll(1, expand(a1));
    } else if (action == "burst") {
      std::string text;
      for (int n = std::atoi(a1.c_str()), k = 0; k < n; ++k)
        text += "burst " + std::to_string(g_rank) + " line " + std::to_string(k) + "\n";
      writeAll(1, text);
    } else if (action == "pidfile") {
      writePidFile(a1);
    } else if (action == "wait-pidfiles") {
      const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (countPidFiles(a1) < std::atoi(a2.c_str())) {
        if (std::chrono::steady_clock::now() > giveUp) usage("the other ranks never started");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    } else if (action == "wait-exit") {
      const std::string path = a1 + "/rank" + a2 + ".pid";
      const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (true) {
        if (std::chrono::steady_clock::now() > giveUp) usage("rank " + a2 + " never ended");
        if (FILE* f = std::fopen(path.c_str(), "r")) {
          long pid = 0;
          const int got = std::fscanf(f, "%ld", &pid);
          std::fclose(f);
          if (got == 1 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    } else if (action == "sleep") {
      std::this_thread::sleep_for(std::chrono::duration<double>(std::atof(a1.c_str())));
    } else if (action == "exit") {
      std::exit(std::atoi(a1.c_str()));
    } else if (action == "signal") {
      const int sig = std::atoi(a1.c_str());
      ::signal(sig, SIG_DFL);
      const sigset_t set = terminationSignals();
      ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
      ::kill(::getpid(), sig);
      ::pause();
    } else if (action == "wait-term") {
      const sigset_t set = terminationSignals();
      int sig = 0;
      ::sigwait(&set, &sig);
      const char* name = sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "SIGHUP";
      writeAll(1, "rank " + std::to_string(g_rank) + " got " + name + "\n");
      return 0;
    } else if (action == "ignore-term") {
      ::signal(SIGTERM, SIG_IGN);
    }
  }
  return 0;
}
