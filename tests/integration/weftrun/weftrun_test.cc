// weftrun as its users see it: what each rank is given, what comes out, and what weftrun does
// and exits with when ranks fail, hang or are interrupted. Every rank is weftrun-test-child.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "launch.hpp"
#include "lib/base/cpus.hpp"

using namespace weftrun_test;
using Catch::Matchers::Contains;
using Strings = std::vector<std::string>;

namespace {

const std::string kChild = CHILD_PATH;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The value of key=... in a line of space-separated key=value words.
std::string field(const std::string& line, const std::string& key) {
  const size_t at = line.find(" " + key + "=");
  if (at == std::string::npos) return "";
  const size_t start = at + key.size() + 2;
  return line.substr(start, line.find(' ', start) - start);
}

bool isLowerHex(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

void requireAllGone(const ScratchDir& dir, size_t expected) {
  const auto pids = dir.pids();
  REQUIRE(pids.size() == expected);
  for (const auto& [rank, pid] : pids) {
    INFO("rank " << rank << " pid " << pid);
    CHECK(processGone(pid));
  }
}

// Dead once gone or a zombie, within a generous bound (an orphan is reaped by whoever adopts it,
// which in a container may be nobody).
bool eventuallyDead(pid_t pid) {
  for (int i = 0; i < 3000; ++i) {
    if (processGone(pid)) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t paren = text.rfind(')');
    if (paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z')
      return true;
    ::usleep(10 * 1000);
  }
  return false;
}

// Sets an environment variable for one test and puts the old value back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty())
      ::unsetenv(name_);
    else
      ::setenv(name_, old_.c_str(), 1);
  }

 private:
  const char* name_;
  std::string old_;
};

}  // namespace

TEST_CASE("every rank gets its own rank, the job size and the same 256-hex-digit unique id") {
  const ScopedEnv marker("WEFTRUN_TEST_MARKER", "passed-through");
  const ScopedEnv stale("WEFT_RANK", "77");  // as if weftrun ran inside another job's rank
  const Outcome o = runWeftrun({"-n", "4", "--", kChild, "env"});
  INFO(o.err);
  REQUIRE(o.exitCode == 0);
  std::set<std::string> ranks, ids;
  int count = 0;
  for (const std::string& line : lines(o.out)) {
    if (line.rfind("env ", 0) != 0) continue;
    ++count;
    INFO(line);
    ranks.insert(field(line, "rank"));
    ids.insert(field(line, "id"));
    CHECK(field(line, "nranks") == "4");
    CHECK(field(line, "local_rank") == field(line, "rank"));
    CHECK(field(line, "local_size") == "4");
    CHECK(field(line, "marker") == "passed-through");
  }
  CHECK(count == 4);
  CHECK(ranks == std::set<std::string>{"0", "1", "2", "3"});
  REQUIRE(ids.size() == 1);
  CHECK(ids.begin()->size() == 256);
  CHECK(isLowerHex(*ids.begin()));
}

TEST_CASE("a program name without a slash is looked up in PATH") {
  CHECK(runWeftrun({"-n", "2", "true"}).exitCode == 0);
  CHECK(runWeftrun({"-n", "2", "false"}).exitCode == 1);
}

TEST_CASE("with --tag-output every line of stdout and stderr is prefixed with its rank, in order") {
  const Outcome o =
      runWeftrun({"-n", "3", "--tag-output", kChild, "out", "hello from {rank}", "err",
                  "warning from {rank}", "burst", "50", "partial", "no newline {rank}"});
  INFO(o.err);
  REQUIRE(o.exitCode == 0);
  const Strings out = lines(o.out), err = lines(o.err);
  CHECK(out.size() == 3 * 52);
  CHECK(err.size() == 3);
  for (int r = 0; r < 3; ++r) {
    const std::string prefix = "[" + std::to_string(r) + "] ";
    Strings expected{prefix + "hello from " + std::to_string(r)};
    for (int k = 0; k < 50; ++k)
      expected.push_back(prefix + "burst " + std::to_string(r) + " line " + std::to_string(k));
    expected.push_back(prefix + "no newline " + std::to_string(r));  // flushed at end of stream
    Strings mine;
    std::copy_if(out.begin(), out.end(), std::back_inserter(mine),
                 [&](const std::string& l) { return l.rfind(prefix, 0) == 0; });
    CHECK(mine == expected);
    CHECK(std::count(err.begin(), err.end(), prefix + "warning from " + std::to_string(r)) == 1);
  }
}

TEST_CASE("without --tag-output ranks write straight to weftrun's stdout and stderr") {
  const Outcome o = runWeftrun({"-n", "2", kChild, "out", "plain {rank}", "err", "oops {rank}"});
  REQUIRE(o.exitCode == 0);
  Strings out = lines(o.out), err = lines(o.err);
  std::sort(out.begin(), out.end());
  std::sort(err.begin(), err.end());
  CHECK(out == Strings{"plain 0", "plain 1"});
  CHECK(err == Strings{"oops 0", "oops 1"});
}

TEST_CASE("a failing rank's exit status becomes weftrun's, and weftrun names the rank and pid") {
  ScratchDir dir;
  const std::string d = dir.path();
  const Outcome o = runWeftrun(
      {"-n", "3", kChild, "pidfile", d, "@2", "wait-pidfiles", d, "3", "@2", "exit", "3"});
  INFO(o.err);
  CHECK(o.exitCode == 3);
  const auto pids = dir.pids();
  REQUIRE(pids.count(2) == 1);
  CHECK_THAT(o.err, Contains("weftrun: rank 2 (pid " + std::to_string(pids.at(2)) +
                             ") exited with status 3"));
  requireAllGone(dir, 3);
}

TEST_CASE("a rank killed by a signal is named with the signal, and weftrun exits 128+signal") {
  const int sig = GENERATE(SIGKILL, SIGTERM);
  ScratchDir dir;
  const Outcome o =
      runWeftrun({"-n", "2", kChild, "pidfile", dir.path(), "@1", "signal", std::to_string(sig)});
  INFO(o.err);
  CHECK(o.exitCode == 128 + sig);
  const auto pids = dir.pids();
  REQUIRE(pids.count(1) == 1);
  CHECK_THAT(o.err, Contains("weftrun: rank 1 (pid " + std::to_string(pids.at(1)) +
                             ") was killed by signal " + std::to_string(sig) + " (" +
                             ::strsignal(sig) + ")"));
}

TEST_CASE("when one rank fails the others are stopped at once, and none is left behind") {
  ScratchDir dir;
  // Ranks 0, 2 and 3 would sleep far past the harness's limit unless weftrun stops them.
  const Outcome o = runWeftrun({"-n", "4", kChild, "pidfile", dir.path(), "@1", "wait-pidfiles",
                                dir.path(), "4", "@1", "exit", "5", "sleep", "600"});
  INFO(o.err);
  REQUIRE_FALSE(o.timedOut);
  CHECK(o.exitCode == 5);
  const auto pids = dir.pids();
  REQUIRE(pids.count(1) == 1);
  CHECK_THAT(o.err, Contains("weftrun: rank 1 (pid " + std::to_string(pids.at(1)) +
                             ") exited with status 5; stopping the other ranks"));
  requireAllGone(dir, 4);
}

TEST_CASE("a rank that ignores SIGTERM is killed when the grace period ends") {
  ScratchDir dir;
  const Outcome o =
      runWeftrun({"-n", "2", kChild, "ignore-term", "pidfile", dir.path(), "@0", "wait-pidfiles",
                  dir.path(), "2", "@0", "exit", "1", "sleep", "600"});
  INFO(o.err);
  REQUIRE_FALSE(o.timedOut);
  CHECK(o.exitCode == 1);
  CHECK_THAT(o.err, Contains("sending SIGKILL"));
  requireAllGone(dir, 2);
}

TEST_CASE("a job still running at its --timeout is stopped, the running ranks named, exit 124") {
  ScratchDir dir;
  const std::string d = dir.path();
  const Outcome o = runWeftrun({"-n", "3", "--timeout", "3", kChild, "pidfile", d, "@1",
                                "wait-pidfiles", d, "3", "@1", "exit", "0", "sleep", "600"});
  INFO(o.err);
  REQUIRE_FALSE(o.timedOut);
  CHECK(o.exitCode == 124);
  CHECK_THAT(o.err, Contains("weftrun: timed out after 3 s; ranks still running: 0, 2"));
  requireAllGone(dir, 3);
}

TEST_CASE("with --keep-going the other ranks finish and every rank is reported") {
  ScratchDir dir;
  const std::string d = dir.path();
  // Rank 0 finishes only after rank 1 has failed and been reaped.
  const Outcome o =
      runWeftrun({"-n", "3", "--keep-going", kChild, "pidfile", d, "@1", "exit", "4", "@2",
                  "signal", "15", "wait-exit", d, "1", "out", "rank {rank} finished"});
  INFO(o.err);
  CHECK((o.exitCode == 4 || o.exitCode == 128 + SIGTERM));
  CHECK(o.out == "rank 0 finished\n");
  const auto pids = dir.pids();
  REQUIRE(pids.size() == 3);
  CHECK_THAT(o.err, !Contains("stopping the other ranks"));
  CHECK_THAT(o.err, Contains("weftrun: rank 0 (pid " + std::to_string(pids.at(0)) +
                             ") exited with status 0\n"));
  CHECK_THAT(o.err, Contains("weftrun: rank 1 (pid " + std::to_string(pids.at(1)) +
                             ") exited with status 4\n"));
  CHECK_THAT(o.err, Contains("weftrun: rank 2 (pid " + std::to_string(pids.at(2)) +
                             ") was killed by signal 15 (" + ::strsignal(SIGTERM) + ")\n"));
}

TEST_CASE("SIGTERM, SIGINT and SIGHUP sent to weftrun reach every rank") {
  const int sig = GENERATE(SIGTERM, SIGINT, SIGHUP);
  ScratchDir dir;
  Weftrun run({"-n", "3", kChild, "pidfile", dir.path(), "wait-term"});
  REQUIRE(dir.waitForPids(3));
  run.signal(sig);
  const Outcome o = run.wait();
  INFO(o.err);
  REQUIRE_FALSE(o.timedOut);
  CHECK(o.exitCode == 128 + sig);
  const std::string name = sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "SIGHUP";
  CHECK_THAT(o.err, Contains("weftrun: received " + name));
  for (int r = 0; r < 3; ++r)
    CHECK_THAT(o.out, Contains("rank " + std::to_string(r) + " got " + name));
  requireAllGone(dir, 3);
}

TEST_CASE("stopping a rank reaches what it started: a wrapper script's program stops too") {
  ScratchDir dir;
  // Each rank is a shell that runs the helper as its child (no exec), and waits for it.
  const Outcome o = runWeftrun({"-n", "2", "/bin/sh", "-c", "\"$0\" \"$@\"; exit $?", kChild,
                                "pidfile", dir.path(), "@1", "wait-pidfiles", dir.path(), "2", "@1",
                                "exit", "6", "sleep", "600"});
  INFO(o.err);
  REQUIRE_FALSE(o.timedOut);
  CHECK(o.exitCode == 6);
  const auto pids = dir.pids();
  REQUIRE(pids.count(0) == 1);
  // Rank 0's helper is not weftrun's child: whoever adopts it reaps it, so allow for that.
  CHECK(eventuallyDead(pids.at(0)));
}

TEST_CASE("bad usage is explained and exits 2") {
  ScratchDir dir;
  const std::string dirPath = dir.path();
  const std::string notExecutable = dirPath + "/not-executable";
  std::ofstream(notExecutable) << "#!/bin/sh\n";
  const Strings args = GENERATE_COPY(
      Strings{}, Strings{"-n"}, Strings{"-n", "2"}, Strings{"-n", "0", kChild},
      Strings{"-n", "-3", kChild}, Strings{"-n", "two", kChild}, Strings{kChild},
      Strings{"--bogus", "-n", "2", kChild}, Strings{"-n", "2", "--timeout", "0", kChild},
      Strings{"-n", "2", "--bind-to", "socket", kChild}, Strings{"-n", "2", "/nonexistent/program"},
      Strings{"-n", "2", "no-such-program-here"}, Strings{"-n", "2", notExecutable},
      Strings{"-n", "2", dirPath});
  const Outcome o = runWeftrun(args);
  INFO(o.err);
  CHECK(o.exitCode == 2);
  CHECK_THAT(o.err, Contains("weftrun: "));
  CHECK(o.out.empty());
  if (args.size() == 3 && args[2] != kChild) CHECK_THAT(o.err, Contains("'" + args[2] + "'"));
}

namespace {

// The CPUs this process may run on, as /proc writes them ("0-1", "3").
std::string ownCpuList() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Cpus_allowed_list:", 0) == 0)
      return line.substr(line.find_first_not_of(" \t", 18));
  return "";
}

// Each rank's CPU list, from ranks that print their own under --tag-output.
std::map<int, std::string> rankCpuLists(const Strings& options, int n) {
  Strings args = {"-n", std::to_string(n), "--tag-output"};
  args.insert(args.end(), options.begin(), options.end());
  args.insert(args.end(), {"sh", "-c", "grep Cpus_allowed_list /proc/self/status"});
  const Outcome o = runWeftrun(args);
  INFO(o.err);
  REQUIRE(o.exitCode == 0);
  std::map<int, std::string> lists;
  for (const std::string& line : lines(o.out)) {
    // "[2] Cpus_allowed_list:\t0-1"
    const int rank = std::stoi(line.substr(1, line.find(']') - 1));
    lists[rank] = line.substr(line.find_first_not_of(" \t", line.find(':') + 1));
  }
  REQUIRE(lists.size() == static_cast<size_t>(n));
  return lists;
}

}  // namespace

TEST_CASE(
    "weftrun --bind-to core pins rank i to weftrun's i-th CPU, round-robin, and ranks are free by "
    "default") {
  const std::vector<int> cpus = weft::allowedCpus();
  const std::string all = ownCpuList();
  REQUIRE(!cpus.empty());
  const int n = static_cast<int>(cpus.size());
  for (const int ranks : {std::min(n, 4), n + 1}) {
    CAPTURE(ranks);
    for (const auto& [rank, list] : rankCpuLists({"--bind-to", "core"}, ranks))
      CHECK(list == std::to_string(cpus[rank % n]));
  }
  for (const Strings& options : {Strings{}, Strings{"--bind-to", "none"}})
    for (const auto& [rank, list] : rankCpuLists(options, 2)) CHECK(list == all);
}

TEST_CASE("weftrun --help prints the usage and exits 0") {
  const Outcome o = runWeftrun({"--help"});
  CHECK(o.exitCode == 0);
  CHECK_THAT(o.out, Contains("usage: weftrun -n N"));
  CHECK_THAT(o.out, Contains("--tag-output"));
  CHECK_THAT(o.out, Contains("--timeout"));
  CHECK_THAT(o.out, Contains("--keep-going"));
  CHECK_THAT(o.out, Contains("--bind-to"));
}

TEST_CASE("a program the kernel cannot execute is reported for the rank that tried, exit 2") {
  ScratchDir dir;
  const std::string garbage = dir.path() + "/garbage";
  std::ofstream(garbage) << "this is not a program\n";
  REQUIRE(::chmod(garbage.c_str(), 0755) == 0);
  const Outcome o = runWeftrun({"-n", "2", garbage});
  CHECK(o.exitCode == 2);
  CHECK_THAT(o.err, Contains("rank 0: cannot run '" + garbage + "': " + ::strerror(ENOEXEC)));
}
