#include "transports/routed/routed_transport.hpp"

#include <poll.h>

#include <string>
#include <utility>

#include "lib/base/error.hpp"

namespace weft {
namespace {

class RoutedTransport final : public Transport {
 public:
  RoutedTransport(std::vector<std::unique_ptr<Transport>> ways, std::vector<Route> routes)
      : ways_(std::move(ways)), routes_(std::move(routes)) {
    if (ways_.empty()) fail(weftInternalError, "a routed transport needs at least one transport");
    polls_.resize(ways_.size());
    armedWays_.resize(ways_.size());
    for (const Route& r : routes_)
      if (r.way < 0 || r.way >= static_cast<int>(ways_.size()))
        fail(weftInternalError, "a route names transport {} of {}", r.way, ways_.size());
    for (const auto& way : ways_) {
      if (!name_.empty()) name_ += '+';
      name_ += way->name();
    }
  }

  const char* name() const override { return name_.c_str(); }

  void postSend(int peer, uint64_t tag, const void* buf, size_t bytes, Request* req) override {
    const Route& r = routeTo(peer, "send");
    req->peer = peer;
    ways_[r.way]->postSend(r.peer, tag, buf, bytes, req);
  }

  void postRecv(int peer, uint64_t tag, void* buf, size_t bytes, Request* req) override {
    const Route& r = routeTo(peer, "recv");
    req->peer = peer;
    ways_[r.way]->postRecv(r.peer, tag, buf, bytes, req);
  }

  // Every way with requests pending, and every way on one call in kIdleProgressEvery. A UCX
  // worker with a tcp lane makes a system call per progress call, which the rank paid on every
  // poll of a shm exchange; a way with nothing pending has nothing this rank waits for (what it
  // owes its peers, flush() hands over), so now and then is enough. 8 B allreduce on the 2x2
  // bed: 0.8x the time (perf/README.md).
  bool progress() override {
    bool moved = false;
    const bool all = ++progressCalls_ % kIdleProgressEvery == 0;
    for (const auto& way : ways_)
      if (all || way->busy()) moved |= way->progress();
    return moved;
  }

  // Sleeps on every transport that has requests pending at once: arms each and polls all their
  // descriptors. When one has news already, or one cannot wake a sleeper, nobody sleeps (false
  // for the latter: the executor yields and naps instead).
  bool waitForActivity(int64_t maxUs) override {
    size_t armed = 0;
    int refusal = 0;  // kWakeNow or kCannotWake from the way that stopped the arming
    for (const auto& way : ways_) {
      if (!way->busy()) continue;
      const int fd = way->armWake();
      if (fd < 0) {
        refusal = fd;
        break;
      }
      polls_[armed] = pollfd{fd, POLLIN, 0};
      armedWays_[armed++] = way.get();
    }
    if (refusal == 0 && armed > 0) pollFor(polls_.data(), armed, maxUs);
    for (size_t i = 0; i < armed; ++i) armedWays_[i]->disarmWake();
    return refusal == kWakeNow || (refusal == 0 && armed > 0);
  }

  bool busy() const override {
    for (const auto& way : ways_)
      if (way->busy()) return true;
    return false;
  }

  bool flush() override {
    bool done = true;
    for (const auto& way : ways_) done &= way->flush();  // every way, even after one says no
    return done;
  }

  void cancel(Request* req) override {
    if (req->finished()) return;
    ways_[routeTo(req->peer, "cancel").way]->cancel(req);
  }

  void close(Deadline deadline) override {
    for (const auto& way : ways_) way->close(deadline);
  }

  std::string lostPeer() const override {
    for (const auto& way : ways_) {
      std::string lost = way->lostPeer();
      if (!lost.empty()) return lost;
    }
    return {};
  }

 private:
  const Route& routeTo(int peer, const char* what) const {
    if (peer < 0 || peer >= static_cast<int>(routes_.size()))
      fail(weftInternalError, "{}: {} with peer {} refused: the communicator has {} ranks", name_,
           what, peer, routes_.size());
    return routes_[peer];
  }

  std::vector<std::unique_ptr<Transport>> ways_;
  std::vector<Route> routes_;
  std::string name_;
  std::vector<pollfd> polls_;          // waitForActivity's, one per way
  std::vector<Transport*> armedWays_;  // the ways it armed
  static constexpr uint32_t kIdleProgressEvery = 16;
  uint32_t progressCalls_ = 0;
};

}  // namespace

std::unique_ptr<Transport> createRoutedTransport(std::vector<std::unique_ptr<Transport>> ways,
                                                 std::vector<Route> routes) {
  return std::make_unique<RoutedTransport>(std::move(ways), std::move(routes));
}

}  // namespace weft
