// The job both fault tests run: the parent hosts the rendezvous and starts NRANKS ranks as new
// processes (fork then exec, since forking a process that runs threads, the rendezvous root's
// among them, is unsafe); each rank runs `rankMain`, and one of them, the victim, kills itself.
// The job passes when the victim died by SIGKILL and every other rank exited 0.
//
//   PROGRAM NRANKS BYTES
#pragma once

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "include/weft.h"

namespace weft::faults {

// A collective that has returned on one rank may still be running on others (the rank's last
// message can be on its way): a victim that dies right after it makes a survivor fail in it.
// Each rank marks that it is past a point; the victim waits until all the others are before it
// dies. The marks are files in a folder the job makes (WEFT_TEST_VICTIM_DIR).
inline void markPast(int rank) {
  const char* dir = std::getenv("WEFT_TEST_VICTIM_DIR");
  if (dir) std::fclose(std::fopen(fmt::format("{}/past.{}", dir, rank).c_str(), "w"));
}

// True once every rank but `self` has called markPast; false after 60 s.
inline bool othersPast(int n, int self) {
  const char* dir = std::getenv("WEFT_TEST_VICTIM_DIR");
  if (!dir) return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    int past = 0;
    for (int r = 0; r < n; ++r)
      if (r != self && std::filesystem::exists(fmt::format("{}/past.{}", dir, r))) ++past;
    if (past == n - 1) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// The victim leaves its pid (before it starts dying); the others wait with waitUntilDead.
inline void leavePid(int rank) {
  const char* dir = std::getenv("WEFT_TEST_VICTIM_DIR");
  if (!dir) return;
  const std::string path = fmt::format("{}/pid.{}", dir, rank);
  std::FILE* f = std::fopen((path + ".part").c_str(), "w");
  if (!f) return;
  std::fprintf(f, "%d\n", static_cast<int>(getpid()));
  std::fclose(f);
  std::filesystem::rename(path + ".part", path);  // whole or absent for the readers
}

// True once `rank` has left its pid and that process is dead (a zombie: the job reaps the ranks
// in rank order, or gone); false after 60 s.
inline bool waitUntilDead(int rank) {
  const char* dir = std::getenv("WEFT_TEST_VICTIM_DIR");
  if (!dir) return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int pid = 0;
  for (;;) {
    if (pid == 0) {
      if (std::FILE* f = std::fopen(fmt::format("{}/pid.{}", dir, rank).c_str(), "r")) {
        if (std::fscanf(f, "%d", &pid) != 1) pid = 0;
        std::fclose(f);
      }
    }
    if (pid != 0) {
      // /proc/PID/stat: "PID (COMM) STATE ..."; COMM may hold spaces, so look after the last ')'.
      std::FILE* f = std::fopen(fmt::format("/proc/{}/stat", pid).c_str(), "r");
      if (!f) return true;
      char line[512] = {};
      const bool read = std::fgets(line, sizeof line, f) != nullptr;
      std::fclose(f);
      const char* close = read ? std::strrchr(line, ')') : nullptr;
      if (close && (close[2] == 'Z' || close[2] == 'X')) return true;
    }
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// rankMain(id, nranks, rank, bytes) returns the rank's exit status.
using RankMain = int (*)(const weftUniqueId& id, int n, int rank, size_t bytes);

inline int runVictimJob(int argc, char** argv, int victim, RankMain rankMain,
                        const char* passed) {
  if (argc == 6 && std::strcmp(argv[1], "--rank") == 0) {  // a rank, started below
    weftUniqueId id{};
    const std::string hex = argv[5];
    for (int i = 0; i < WEFT_UNIQUE_ID_BYTES; ++i)
      id.internal[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
    const int code = rankMain(id, std::atoi(argv[3]), std::atoi(argv[2]),
                              std::strtoull(argv[4], nullptr, 10));
    std::fflush(stdout);
    return code;
  }
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s NRANKS BYTES\n", argv[0]);
    return 2;
  }
  weftUniqueId id;
  if (weftGetUniqueId(&id) != weftSuccess) return 2;
  std::string hex;
  for (char c : id.internal) hex += fmt::format("{:02x}", static_cast<uint8_t>(c));
  const int n = std::atoi(argv[1]);
  char dir[] = "/tmp/weft-victim-XXXXXX";
  if (!mkdtemp(dir)) return 2;
  setenv("WEFT_TEST_VICTIM_DIR", dir, 1);
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    const std::string rank = std::to_string(r);
    const pid_t pid = fork();
    if (pid == 0) {
      execl("/proc/self/exe", argv[0], "--rank", rank.c_str(), argv[1], argv[2], hex.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    pids.push_back(pid);
  }
  int failures = 0;
  for (int r = 0; r < n; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    const bool expected = r == victim ? WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL
                                      : WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!expected) {
      std::fprintf(stderr, "rank %d ended unexpectedly (status %#x)\n", r, status);
      ++failures;
    }
  }
  std::filesystem::remove_all(dir);
  std::printf("%s\n", failures ? "FAILED" : passed);
  return failures ? 1 : 0;
}

}  // namespace weft::faults
