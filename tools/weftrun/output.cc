#include "tools/weftrun/output.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace weft::run {

bool writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n >= 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {  // someone made our stream non-blocking
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, -1);
      continue;
    }
    return false;
  }
  return true;
}

LineTagger::LineTagger(int rank, int outFd) : prefix_(fmt::format("[{}] ", rank)), outFd_(outFd) {}

void LineTagger::emit(std::string_view line) {
  if (outputGone_) return;
  scratch_.assign(prefix_);
  scratch_.append(line);
  scratch_.push_back('\n');
  if (!writeAll(outFd_, scratch_)) outputGone_ = true;  // keep draining the rank, drop its text
}

void LineTagger::feed(std::string_view data) {
  while (!data.empty()) {
    const size_t newline = data.find('\n');
    if (newline == std::string_view::npos) {
      partial_.append(data);
      while (partial_.size() >= kMaxLineBytes) {
        emit(std::string_view(partial_).substr(0, kMaxLineBytes));
        partial_.erase(0, kMaxLineBytes);
      }
      return;
    }
    if (partial_.empty()) {
      emit(data.substr(0, newline));
    } else {
      partial_.append(data.substr(0, newline));
      emit(partial_);
      partial_.clear();
    }
    data.remove_prefix(newline + 1);
  }
}

void LineTagger::finish() {
  if (partial_.empty()) return;
  emit(partial_);
  partial_.clear();
}

}  // namespace weft::run
