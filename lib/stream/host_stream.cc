#include "lib/stream/host_stream.hpp"

#include "lib/base/log.hpp"

namespace weft {

HostStream::HostStream() : worker_([this] { run(); }) {}

HostStream::~HostStream() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  workCv_.notify_all();
  worker_.join();
}

void HostStream::enqueue(std::function<void()> task) {
  {
    std::unique_lock lock(mutex_);
    if (queue_.size() >= kMaxQueued) {
      ++producersWaiting_;
      spaceCv_.wait(lock, [&] { return queue_.size() <= kMaxQueued / 2; });
      --producersWaiting_;
    }
    queue_.push_back(std::move(task));
  }
  workCv_.notify_one();
}

std::optional<Error> HostStream::synchronize() {
  std::unique_lock lock(mutex_);
  idleCv_.wait(lock, [&] { return queue_.empty() && !busy_; });
  std::optional<Error> error;
  error.swap(firstError_);
  return error;
}

bool HostStream::idle() const {
  std::lock_guard lock(mutex_);
  return queue_.empty() && !busy_;
}

void HostStream::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    workCv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
    if (queue_.empty()) return;  // stopping, and everything has run
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    if (producersWaiting_ > 0 && queue_.size() <= kMaxQueued / 2) spaceCv_.notify_all();
    busy_ = true;
    lock.unlock();
    std::optional<Error> failed;
    try {
      task();
    } catch (const Error& e) {
      failed = e;
    } catch (const std::exception& e) {
      failed = Error(weftInternalError, e.what());
    }
    lock.lock();
    busy_ = false;
    if (failed && !firstError_) firstError_ = std::move(failed);
    if (queue_.empty()) idleCv_.notify_all();
  }
}

}  // namespace weft
