// ProcessWatch with real child processes: an exited child is reported once, a live one never,
// and the description names every rank found gone with its pid.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "lib/base/process_watch.hpp"

namespace {

pid_t startSleeper() {
  const pid_t pid = fork();
  if (pid == 0) {
    pause();
    _exit(0);
  }
  return pid;
}

// Polls until `want` ranks are reported or 10 s pass (a deadline, not a timing assertion).
std::vector<int> pollFor(weft::ProcessWatch& watch, size_t want) {
  std::vector<int> exited;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (exited.size() < want && std::chrono::steady_clock::now() < deadline) {
    watch.poll(exited);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return exited;
}

}  // namespace

TEST_CASE("ProcessWatch reports exited processes once and names them with their pids") {
  if (!weft::ProcessWatch::supported()) {
    WARN("skipped: no pidfd on this kernel");
    return;
  }
  const pid_t a = startSleeper(), b = startSleeper(), c = startSleeper();
  REQUIRE(a > 0);
  REQUIRE(b > 0);
  REQUIRE(c > 0);
  weft::ProcessWatch watch;
  REQUIRE(watch.add(3, a));
  REQUIRE(watch.add(5, b));
  REQUIRE(watch.add(7, c));
  std::vector<int> none;
  watch.poll(none);
  CHECK(none.empty());

  kill(a, SIGKILL);
  kill(c, SIGKILL);
  // Zombies count as exited: the pidfd is readable before the parent reaps them.
  std::vector<int> exited = pollFor(watch, 2);
  REQUIRE(exited.size() == 2);
  // Two polls may see the two exits in either order; the description follows the list given.
  std::sort(exited.begin(), exited.end());
  CHECK(watch.describeExited(exited) ==
        "ranks 3, 7 (pids " + std::to_string(a) + ", " + std::to_string(c) + ") exited");
  CHECK(watch.describeExited({5}) == "rank 5 (pid " + std::to_string(b) + ") exited");
  std::vector<int> again;
  watch.poll(again);
  CHECK(again.empty());  // each rank once

  kill(b, SIGKILL);
  for (pid_t pid : {a, b, c}) waitpid(pid, nullptr, 0);
}
