// Ranks as separate processes for the shm tests: runProcesses() maps a small shared anonymous
// area, forks one child per rank (the test process has no other threads at that point), and
// each child runs the rank's function with an OutOfBand over that area, then _exits without
// returning into Catch2. The parent reaps every child, killing those still alive at the
// deadline, and returns what each rank threw (or how it died) and the notes it left.
#pragma once

#include <fmt/format.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "lib/base/error.hpp"
#include "shm_test_util.hpp"
#include "transports/transport.hpp"

namespace weft::test {

// Lives in MAP_SHARED | MAP_ANONYMOUS memory mapped before fork: every child sees it.
struct ProcessArea {
  static constexpr int kMaxRanks = 16;
  static constexpr size_t kMaxBlob = 1024;
  static constexpr size_t kTextBytes = 2048;
  std::atomic<uint32_t> arrived{0};
  std::atomic<uint32_t> generation{0};
  std::atomic<uint32_t> aborted{0};
  uint32_t sizes[kMaxRanks] = {};
  uint8_t blobs[kMaxRanks][kMaxBlob] = {};
  char errors[kMaxRanks][kTextBytes] = {};
  char notes[kMaxRanks][kTextBytes] = {};
};
static_assert(std::atomic<uint32_t>::is_always_lock_free);

class ProcessOob final : public OutOfBand {
 public:
  ProcessOob(ProcessArea* area, int rank, int nranks) : area_(area), rank_(rank), n_(nranks) {}
  int rank() const override { return rank_; }
  int nranks() const override { return n_; }

  std::vector<std::vector<uint8_t>> allGather(std::span<const uint8_t> mine,
                                              Deadline deadline) override {
    if (mine.size() > ProcessArea::kMaxBlob) fail(weftInternalError, "process oob: blob too big");
    if (!mine.empty()) std::memcpy(area_->blobs[rank_], mine.data(), mine.size());
    area_->sizes[rank_] = static_cast<uint32_t>(mine.size());
    barrier(deadline);
    std::vector<std::vector<uint8_t>> all(static_cast<size_t>(n_));
    for (int r = 0; r < n_; ++r) all[r].assign(area_->blobs[r], area_->blobs[r] + area_->sizes[r]);
    barrier(deadline);  // nobody overwrites a blob before everyone has read it
    return all;
  }

  // Central barrier: the last to arrive resets the count and bumps the generation.
  void barrier(Deadline deadline) override {
    const uint32_t gen = area_->generation.load(std::memory_order_acquire);
    if (area_->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint32_t>(n_)) {
      area_->arrived.store(0, std::memory_order_relaxed);
      area_->generation.fetch_add(1, std::memory_order_acq_rel);
      return;
    }
    while (area_->generation.load(std::memory_order_acquire) == gen) {
      if (area_->aborted.load(std::memory_order_acquire) != 0) {
        fail(weftRemoteError, "rank {}: process oob barrier abandoned: another rank failed", rank_);
      }
      if (deadline.expired()) {
        area_->aborted.store(1, std::memory_order_release);
        fail(weftTimeout, "rank {}: process oob barrier timed out", rank_);
      }
      usleep(50);
    }
  }

  // Leaves text for the parent (e.g. an error message the test checks).
  void note(const std::string& text) {
    std::snprintf(area_->notes[rank_], ProcessArea::kTextBytes, "%s", text.c_str());
  }
  bool othersFailed() const { return area_->aborted.load(std::memory_order_acquire) != 0; }

 private:
  ProcessArea* area_;
  int rank_;
  int n_;
};

struct ProcessOutcome {
  std::string error;  // "" when the rank returned normally
  std::string note;
};

// Runs fn(rank, oob) in one child process per rank; returns each rank's outcome.
inline std::vector<ProcessOutcome> runProcesses(
    int n, const std::function<void(int, ProcessOob&)>& fn,
    Deadline deadline = Deadline::afterMs(kTestTimeoutMs + 30000)) {
  void* mem =
      mmap(nullptr, sizeof(ProcessArea), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw std::runtime_error("mmap of the process area failed");
  auto* area = new (mem) ProcessArea();
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> children;
  for (int r = 0; r < n; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      int code = 0;
      try {
        ProcessOob oob(area, r, n);
        fn(r, oob);
      } catch (const std::exception& e) {
        std::snprintf(area->errors[r], ProcessArea::kTextBytes, "%s", e.what());
        code = 1;
      } catch (...) {
        std::snprintf(area->errors[r], ProcessArea::kTextBytes, "unknown exception");
        code = 1;
      }
      if (code != 0) area->aborted.store(1, std::memory_order_release);
      _exit(code);
    }
    if (pid < 0) {
      area->aborted.store(1);
      break;
    }
    children.push_back(pid);
  }
  std::vector<ProcessOutcome> outcomes(static_cast<size_t>(n));
  std::vector<int> status(children.size(), -1);
  size_t left = children.size();
  while (left > 0) {
    for (size_t i = 0; i < children.size(); ++i) {
      if (status[i] != -1) continue;
      int s = 0;
      if (waitpid(children[i], &s, WNOHANG) == children[i]) {
        status[i] = s;
        --left;
      }
    }
    if (left == 0) break;
    if (deadline.expired()) {
      for (size_t i = 0; i < children.size(); ++i) {
        if (status[i] != -1) continue;
        kill(children[i], SIGKILL);
        waitpid(children[i], &status[i], 0);
        outcomes[i].error = "timed out (killed by the test)";
      }
      break;
    }
    usleep(1000);
  }
  for (int r = 0; r < n; ++r) {
    ProcessOutcome& o = outcomes[r];
    o.note = area->notes[r];
    if (static_cast<size_t>(r) >= children.size()) {
      o.error = "fork failed";
      continue;
    }
    if (!o.error.empty()) continue;
    const int s = status[r];
    if (area->errors[r][0] != '\0') {
      o.error = area->errors[r];
    } else if (WIFSIGNALED(s)) {
      o.error = fmt::format("killed by signal {}", WTERMSIG(s));
    } else if (!WIFEXITED(s) || WEXITSTATUS(s) != 0) {
      o.error = fmt::format("exited with status {}", WEXITSTATUS(s));
    }
  }
  area->~ProcessArea();
  munmap(mem, sizeof(ProcessArea));
  return outcomes;
}

inline std::string joinErrors(const std::vector<ProcessOutcome>& outcomes) {
  std::string all;
  for (size_t r = 0; r < outcomes.size(); ++r) {
    if (!outcomes[r].error.empty()) all += fmt::format("rank {}: {}\n", r, outcomes[r].error);
  }
  return all;
}

}  // namespace weft::test
