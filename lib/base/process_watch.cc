#include "lib/base/process_watch.hpp"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace weft {
namespace {

int pidfdOpen(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

}  // namespace

ProcessWatch::~ProcessWatch() {
  clear();
}

bool ProcessWatch::supported() {
  static const bool ok = [] {
    int fd = pidfdOpen(getpid());
    if (fd < 0) return false;
    close(fd);
    return true;
  }();
  return ok;
}

bool ProcessWatch::add(int rank, pid_t pid) {
  int fd = pidfdOpen(pid);
  if (fd < 0 && errno != ESRCH) return false;
  entries_.push_back(Entry{rank, pid, fd});
  return true;
}

void ProcessWatch::poll(std::vector<int>& exited) {
  // Few entries (the ranks on this host): a small stack array avoids allocating per poll.
  constexpr size_t kBatch = 64;
  for (size_t base = 0; base < entries_.size(); base += kBatch) {
    struct pollfd fds[kBatch];
    size_t n = 0;
    for (size_t i = base; i < entries_.size() && n < kBatch; ++i, ++n) {
      fds[n].fd = entries_[i].fd;  // negative fds are ignored by poll()
      fds[n].events = POLLIN;
      fds[n].revents = 0;
    }
    // On failure (EINTR) revents stay 0: only processes known to be gone are reported.
    (void)::poll(fds, n, 0);
    for (size_t k = 0; k < n; ++k) {
      Entry& e = entries_[base + k];
      if (e.fd < 0 || (fds[k].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        exited.push_back(e.rank);
        if (e.fd >= 0) close(e.fd);
        gone_.push_back(Entry{e.rank, e.pid, -1});
        e.rank = -1;
      }
    }
  }
  std::erase_if(entries_, [](const Entry& e) { return e.rank < 0; });
}

void ProcessWatch::clear() {
  for (const Entry& e : entries_) {
    if (e.fd >= 0) close(e.fd);
  }
  entries_.clear();
  gone_.clear();
}

std::string ProcessWatch::describeExited(const std::vector<int>& ranks) const {
  std::string list, pids;
  for (int rank : ranks) {
    pid_t pid = 0;
    for (const std::vector<Entry>* list : {&entries_, &gone_})
      for (const Entry& e : *list)
        if (e.rank == rank) pid = e.pid;
    list += (list.empty() ? "" : ", ") + std::to_string(rank);
    pids += (pids.empty() ? "" : ", ") + std::to_string(pid);
  }
  const bool several = ranks.size() > 1;
  return std::string(several ? "ranks " : "rank ") + list + (several ? " (pids " : " (pid ") + pids +
         ") exited";
}

}  // namespace weft
