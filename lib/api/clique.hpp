// The communicators weftCommInitAll makes together. Their ranks are threads of this process,
// and NCCL programs finalize or destroy them one after another from one thread (NCCL's
// "single process, single thread, multiple devices" example). Finalize is collective, so a
// barrier per communicator would wait for ranks that thread has not reached yet, until the
// deadline. Instead each communicator only waits for its own operations
// (Comm::finalizeLocally) and leaves the clique; the clique keeps every communicator until all
// have left (finalized, destroyed or aborted), and the last to leave releases them all,
// transports included, when no rank can still be using them.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

namespace weft {
class Comm;
}

namespace weft::api {

class Clique {
 public:
  explicit Clique(int nranks) : nranks_(nranks) {}

  // Rank `rank` leaves with its communicator (null if it has none); once per rank, later
  // calls do nothing. The last rank to leave releases every communicator of the clique.
  void leave(int rank, std::shared_ptr<Comm> comm);

 private:
  std::mutex mutex_;
  const int nranks_;
  std::vector<bool> left_ = std::vector<bool>(static_cast<size_t>(nranks_), false);
  int leftCount_ = 0;
  std::vector<std::shared_ptr<Comm>> held_;
};

}  // namespace weft::api
