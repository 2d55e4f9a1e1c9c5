// In-memory OutOfBand for tests that run the ranks of one communicator as threads of one process
// (transport tests: ucx, shm). One ThreadOobGroup is shared by n ranks; group.rank(r) is rank r's
// OutOfBand. allGather and barrier meet under a mutex and condition variable and honour their
// deadline: the rank whose deadline passes throws Error(weftTimeout) naming the ranks it waited
// for, and poisons the group so that the others fail too instead of waiting for it.
//
// runRanks() starts one thread per rank, aborts the group when a rank throws (releasing the
// others' waits), joins every thread, and returns what each rank threw, so that a test asserts
// from the main thread only (Catch2 assertions are not thread-safe).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "lib/base/error.hpp"
#include "transports/transport.hpp"

namespace weft::test {

class ThreadOobGroup {
 public:
  explicit ThreadOobGroup(int nranks)
      : nranks_(nranks),
        slots_(static_cast<size_t>(nranks)),
        present_(static_cast<size_t>(nranks)) {
    for (int r = 0; r < nranks; ++r) endpoints_.push_back(std::make_unique<Endpoint>(*this, r));
  }
  ThreadOobGroup(const ThreadOobGroup&) = delete;
  ThreadOobGroup& operator=(const ThreadOobGroup&) = delete;

  int nranks() const { return nranks_; }
  OutOfBand& rank(int r) { return *endpoints_.at(static_cast<size_t>(r)); }

  // Fails every present and future wait with weftRemoteError carrying `why`. The first reason
  // is kept.
  void abort(const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (abortReason_.empty()) abortReason_ = why.empty() ? "aborted" : why;
    aborted_.store(true, std::memory_order_release);
    cv_.notify_all();
  }
  // For progress loops in tests: stop waiting on a transport when another rank has failed.
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }

 private:
  class Endpoint final : public OutOfBand {
   public:
    Endpoint(ThreadOobGroup& group, int rank) : group_(group), rank_(rank) {}
    int rank() const override { return rank_; }
    int nranks() const override { return group_.nranks_; }
    std::vector<std::vector<uint8_t>> allGather(std::span<const uint8_t> mine,
                                                Deadline deadline) override {
      return group_.gather(rank_, mine, deadline, "allGather");
    }
    void barrier(Deadline deadline) override { group_.gather(rank_, {}, deadline, "barrier"); }

   private:
    ThreadOobGroup& group_;
    int rank_;
  };

  std::vector<std::vector<uint8_t>> gather(int rank, std::span<const uint8_t> mine,
                                           Deadline deadline, const char* what) {
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t round = round_;
    if (!abortReason_.empty()) {
      fail(weftRemoteError, "rank {}: {} #{} abandoned: {}", rank, what, round, abortReason_);
    }
    if (present_[rank]) {
      fail(weftInternalError, "rank {}: {} #{} entered twice by the same rank", rank, what, round);
    }
    slots_[rank].assign(mine.begin(), mine.end());
    present_[rank] = true;
    if (++arrived_ == nranks_) {
      result_ = std::move(slots_);
      slots_.assign(static_cast<size_t>(nranks_), {});
      present_.assign(static_cast<size_t>(nranks_), false);
      arrived_ = 0;
      ++round_;
      cv_.notify_all();
      return result_;
    }
    const bool forever = deadline.at() == Clock::time_point::max();
    while (round_ == round && abortReason_.empty()) {
      if (forever) {
        cv_.wait(lock);
      } else if (cv_.wait_until(lock, deadline.at()) == std::cv_status::timeout &&
                 round_ == round && abortReason_.empty()) {
        std::string missing;
        for (int r = 0; r < nranks_; ++r) {
          if (!present_[r]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        }
        abortReason_ =
            "rank " + std::to_string(rank) + " timed out in " + what + " #" + std::to_string(round);
        aborted_.store(true, std::memory_order_release);
        cv_.notify_all();
        fail(weftTimeout, "rank {}: {} #{} timed out waiting for ranks {}", rank, what, round,
             missing);
      }
    }
    if (round_ == round) {
      fail(weftRemoteError, "rank {}: {} #{} abandoned: {}", rank, what, round, abortReason_);
    }
    // result_ still holds this round: the next one cannot complete before this rank joins it.
    return result_;
  }

  const int nranks_;
  std::mutex mutex_;
  std::condition_variable cv_;
  uint64_t round_ = 0;  // rounds completed
  int arrived_ = 0;
  std::vector<std::vector<uint8_t>> slots_;
  std::vector<bool> present_;
  std::vector<std::vector<uint8_t>> result_;
  std::string abortReason_;
  std::atomic<bool> aborted_{false};
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
};

// Runs fn(rank, oob) on one thread per rank of `group`. Returns, per rank, the message of what
// it threw ("" when it returned normally). A throwing rank aborts the group.
inline std::vector<std::string> runRanks(ThreadOobGroup& group,
                                         const std::function<void(int, OutOfBand&)>& fn) {
  const int n = group.nranks();
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      std::string error;
      try {
        fn(r, group.rank(r));
        return;
      } catch (const std::exception& e) {
        error = e.what();
      } catch (...) {
        error = "unknown exception";
      }
      errors[static_cast<size_t>(r)] = error.empty() ? "exception without a message" : error;
      group.abort("rank " + std::to_string(r) + " failed: " + error);
    });
  }
  for (std::thread& t : threads) t.join();
  return errors;
}

inline std::vector<std::string> runRanks(int nranks,
                                         const std::function<void(int, OutOfBand&)>& fn) {
  ThreadOobGroup group(nranks);
  return runRanks(group, fn);
}

}  // namespace weft::test
