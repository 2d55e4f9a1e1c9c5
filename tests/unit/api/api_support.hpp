// Helpers for tests of the public C API: communicators as threads of the test process.
#pragma once

#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "include/weft.h"
#include "support/rank_checks.hpp"

namespace weft::testing {

// Runs body(rank) on one thread per rank and joins them all, even when a check fails. The body
// runs on a rank thread: it checks with the RANK_ macros (support/rank_checks.hpp).
inline void onEveryRank(int n, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  std::vector<std::string> failures(n);
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r);
        if (rankCheckFailed()) failures[r] = "a check failed on this rank (see above)";
      } catch (const std::exception& e) {
        failures[r] = e.what();
      } catch (...) {  // a failed REQUIRE: Catch reports it itself
        failures[r] = "a check failed on this rank (see above)";
      }
    });
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    INFO("rank " << r << ": " << failures[r]);
    CHECK(failures[r].empty());
  }
}

// n communicators made by weftCommInitAll, destroyed (collectively) at the end of the scope.
class ThreadComms {
 public:
  explicit ThreadComms(int n) : comms_(n) {
    REQUIRE(weftCommInitAll(comms_.data(), n, nullptr) == weftSuccess);
  }
  ~ThreadComms() {
    onEveryRank(size(), [&](int r) {
      if (comms_[r]) weftCommDestroy(comms_[r]);
    });
  }
  int size() const { return static_cast<int>(comms_.size()); }
  weftComm_t operator[](int r) const { return comms_[r]; }
  // For tests that destroy or abort a communicator themselves.
  void forget(int r) { comms_[r] = nullptr; }

 private:
  std::vector<weftComm_t> comms_;
};

inline std::string lastError(weftComm_t comm) { return weftGetLastError(comm); }

}  // namespace weft::testing
