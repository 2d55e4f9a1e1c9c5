// Notices when a peer process on this host exits: for transports whose same-host channels have
// no failure detection of their own (UCX 1.13's shared-memory transports; weft's shm segment).
// Uses a pidfd per process, which becomes readable when the process exits; poll() costs one
// system call for all watched processes, so callers poll every few milliseconds, not per step.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace weft {

class ProcessWatch {
 public:
  ProcessWatch() = default;
  ProcessWatch(const ProcessWatch&) = delete;
  ProcessWatch& operator=(const ProcessWatch&) = delete;
  ~ProcessWatch();

  // Pidfds work here (Linux >= 5.3): without them the transport uses UCX error handling instead.
  static bool supported();

  // Starts watching `pid` on behalf of `rank`. A process that has already exited is reported by
  // the next poll(). Returns false (and watches nothing) when no pidfd can be opened for it.
  bool add(int rank, pid_t pid);

  bool empty() const { return entries_.empty(); }

  // Appends to `exited` the ranks whose processes exited since they were added; each rank is
  // reported once. Never blocks.
  void poll(std::vector<int>& exited);

  void clear();

  // "rank 1 (pid 4242) exited" or "ranks 0, 1 (pids 4241, 4242) exited", for ranks from poll().
  std::string describeExited(const std::vector<int>& ranks) const;

 private:
  struct Entry {
    int rank;
    pid_t pid;
    int fd;  // -1: exited before we could open it (reported at the next poll)
  };
  std::vector<Entry> entries_;
  std::vector<Entry> gone_;  // reported by poll(): kept for describeExited()
};

}  // namespace weft
