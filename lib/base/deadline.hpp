// Deadlines: every wait in weft has one.
#pragma once

#include <chrono>
#include <cstdint>

namespace weft {

using Clock = std::chrono::steady_clock;

class Deadline {
 public:
  static Deadline afterMs(int64_t ms) { return Deadline(Clock::now() + std::chrono::milliseconds(ms)); }
  static Deadline never() { return Deadline(Clock::time_point::max()); }

  bool expired() const { return Clock::now() >= at_; }
  // Milliseconds left, clamped to [0, INT32_MAX]: suitable for poll(2).
  int remainingMs() const {
    if (at_ == Clock::time_point::max()) return INT32_MAX;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
    if (left < 0) return 0;
    return left > INT32_MAX ? INT32_MAX : static_cast<int>(left);
  }
  Clock::time_point at() const { return at_; }
  Deadline earlier(Deadline other) const { return other.at_ < at_ ? other : *this; }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

}  // namespace weft
