#include "lib/api/clique.hpp"

#include "lib/comm/comm.hpp"

namespace weft::api {

void Clique::leave(int rank, std::shared_ptr<Comm> comm) {
  std::vector<std::shared_ptr<Comm>> released;
  {
    std::lock_guard lock(mutex_);
    if (left_[static_cast<size_t>(rank)]) return;
    left_[static_cast<size_t>(rank)] = true;
    if (comm) held_.push_back(std::move(comm));
    if (++leftCount_ == nranks_) released.swap(held_);
  }
  // Outside the lock: each release may close a transport.
}

}  // namespace weft::api
