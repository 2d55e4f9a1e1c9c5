// The routed transport (transports/routed): each peer reached through the transport its route
// names, under that transport's name for it; progress reaches every busy transport on every
// call and the others now and then; flush, close and lostPeer reach every transport; a cancel
// reaches the one that holds the request; it sleeps on every busy transport at once. Loopback
// transports stand in for shm and UCX (the multi-host tests in tests/integration/multihost run the
// real pair).
#include <sys/eventfd.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/base/error.hpp"
#include "transports/loopback/loopback.hpp"
#include "transports/routed/routed_transport.hpp"

namespace weft {
namespace {

// Passes everything to `inner` and counts what it was asked; busy, armWake, flush and lostPeer
// answer what the test sets.
class Recorder final : public Transport {
 public:
  explicit Recorder(std::unique_ptr<Transport> inner, const char* name = "rec")
      : inner_(std::move(inner)), name_(name) {}
  const char* name() const override { return name_; }
  void postSend(int peer, uint64_t tag, const void* buf, size_t bytes, Request* req) override {
    peers.push_back(peer);
    inner_->postSend(peer, tag, buf, bytes, req);
  }
  void postRecv(int peer, uint64_t tag, void* buf, size_t bytes, Request* req) override {
    peers.push_back(peer);
    inner_->postRecv(peer, tag, buf, bytes, req);
  }
  bool progress() override {
    ++progressCalls;
    return inner_->progress();
  }
  int armWake() override {
    ++armCalls;
    return wakeFd;
  }
  void disarmWake() override { ++disarmCalls; }
  bool busy() const override { return isBusy; }
  bool flush() override {
    ++flushCalls;
    return flushed;
  }
  void cancel(Request* req) override {
    ++cancelCalls;
    inner_->cancel(req);
  }
  void close(Deadline deadline) override {
    ++closeCalls;
    inner_->close(deadline);
  }
  std::string lostPeer() const override { return lost; }

  std::vector<int> peers;
  int progressCalls = 0, flushCalls = 0, cancelCalls = 0, closeCalls = 0;
  int armCalls = 0, disarmCalls = 0;
  int wakeFd = kCannotWake;
  bool isBusy = false, flushed = true;
  std::string lost;

 private:
  std::unique_ptr<Transport> inner_;
  const char* name_;
};

// Four ranks on two "hosts" {0, 1} and {2, 3}. Rank r reaches its host's peer through a
// loopback pair (way 0, peers named 0 and 1 there) and the others through a loopback world of
// four (way 1, peers named by rank): routed[r], with the Recorders kept in near[r] and far[r].
struct TwoHosts {
  std::vector<std::unique_ptr<Transport>> routed;
  std::vector<Recorder*> near, far;

  TwoHosts() {
    std::vector<std::unique_ptr<Transport>> world = createLoopbackTransports(4);
    std::vector<std::vector<std::unique_ptr<Transport>>> hosts;
    hosts.push_back(createLoopbackTransports(2));
    hosts.push_back(createLoopbackTransports(2));
    for (int r = 0; r < 4; ++r) {
      auto n = std::make_unique<Recorder>(std::move(hosts[r / 2][r % 2]), "near");
      auto f = std::make_unique<Recorder>(std::move(world[r]), "far");
      near.push_back(n.get());
      far.push_back(f.get());
      std::vector<Route> routes;
      for (int peer = 0; peer < 4; ++peer)
        routes.push_back(peer / 2 == r / 2 ? Route{0, peer % 2} : Route{1, peer});
      std::vector<std::unique_ptr<Transport>> ways;
      ways.push_back(std::move(n));
      ways.push_back(std::move(f));
      routed.push_back(createRoutedTransport(std::move(ways), routes));
    }
  }
};

TEST_CASE("routed: every pair exchanges through the way its route names") {
  TwoHosts bed;
  for (Recorder* r : bed.near) r->isBusy = true;  // progressed on every call
  for (Recorder* r : bed.far) r->isBusy = true;
  CHECK(std::string(bed.routed[0]->name()) == "near+far");
  // Payloads of 8 bytes and of 4 KiB (past loopback's eager limit: the send waits for its
  // receive), from every rank to every rank, itself included.
  for (size_t words : {size_t{1}, size_t{512}}) {
    std::vector<std::vector<uint64_t>> out(16, std::vector<uint64_t>(words));
    std::vector<std::vector<uint64_t>> in(16, std::vector<uint64_t>(words, 0));
    std::vector<Request> sends(16), recvs(16);
    for (int from = 0; from < 4; ++from)
      for (int to = 0; to < 4; ++to)
        for (size_t i = 0; i < words; ++i) out[from * 4 + to][i] = 1000 * from + 10 * to + i;
    for (int to = 0; to < 4; ++to)
      for (int from = 0; from < 4; ++from)
        bed.routed[to]->postRecv(from, 7, in[from * 4 + to].data(), words * 8,
                                 &recvs[from * 4 + to]);
    for (int from = 0; from < 4; ++from)
      for (int to = 0; to < 4; ++to)
        bed.routed[from]->postSend(to, 7, out[from * 4 + to].data(), words * 8,
                                   &sends[from * 4 + to]);
    for (int round = 0; round < 100; ++round)
      for (auto& t : bed.routed) t->progress();
    for (int k = 0; k < 16; ++k) {
      INFO("from rank " << k / 4 << " to rank " << k % 4 << ", " << words * 8 << " bytes");
      REQUIRE(sends[k].state.load() == Request::kDone);
      REQUIRE(recvs[k].state.load() == Request::kDone);
      CHECK(recvs[k].bytes == words * 8);
      CHECK(in[k] == out[k]);
    }
  }
  // Rank 2 posted to its host's ranks 2 and 3 as 0 and 1 on the near way, to 0 and 1 by rank
  // on the far way: per payload size, 4 receives then 4 sends.
  CHECK(bed.near[2]->peers == std::vector<int>{0, 1, 0, 1, 0, 1, 0, 1});
  CHECK(bed.far[2]->peers == std::vector<int>{0, 1, 0, 1, 0, 1, 0, 1});
  CHECK(bed.near[0]->progressCalls == 200);
  CHECK(bed.far[0]->progressCalls == 200);
}

TEST_CASE("routed: an idle way is progressed on one call in 16, a busy way on every call") {
  TwoHosts bed;
  Transport& t = *bed.routed[1];
  bed.far[1]->isBusy = true;
  for (int i = 0; i < 64; ++i) t.progress();
  CHECK(bed.far[1]->progressCalls == 64);
  CHECK(bed.near[1]->progressCalls == 4);
  // An idle way still moves what reached it: a message to rank 0 that rank 0's routed
  // transport finds while only its far way is busy.
  uint64_t out = 42, in = 0;
  Request send, recv;
  bed.routed[1]->postSend(0, 3, &out, sizeof out, &send);
  bed.routed[0]->postRecv(1, 3, &in, sizeof in, &recv);
  bed.far[0]->isBusy = true;
  for (int i = 0; i < 64 && recv.state.load() != Request::kDone; ++i) bed.routed[0]->progress();
  CHECK(recv.state.load() == Request::kDone);
  CHECK(in == 42);
}

TEST_CASE("routed: a cancel reaches the way that holds the request") {
  TwoHosts bed;
  uint64_t a = 0, b = 0;
  Request nearRecv, farRecv;
  bed.routed[1]->postRecv(0, 3, &a, 8, &nearRecv);  // rank 0 shares rank 1's host
  bed.routed[1]->postRecv(3, 3, &b, 8, &farRecv);
  bed.routed[1]->cancel(&farRecv);
  CHECK(bed.far[1]->cancelCalls == 1);
  CHECK(bed.near[1]->cancelCalls == 0);
  CHECK(farRecv.state.load() == Request::kCancelled);
  bed.routed[1]->cancel(&nearRecv);
  CHECK(bed.near[1]->cancelCalls == 1);
  CHECK(nearRecv.state.load() == Request::kCancelled);
  // Finished requests are left alone.
  bed.routed[1]->cancel(&nearRecv);
  CHECK(bed.near[1]->cancelCalls == 1);
}

// An eventfd that a test makes readable: the doorbell of a way that has news.
struct EventFd {
  int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ~EventFd() { close(fd); }
  void signal() const {
    const uint64_t one = 1;
    REQUIRE(write(fd, &one, sizeof one) == static_cast<ssize_t>(sizeof one));
  }
};

// Far past ctest's timeout: a wait that no descriptor ends fails the test by hanging it.
constexpr int64_t kForeverUs = int64_t{3600} * 1000000;

TEST_CASE("routed: sleeps on every busy way at once, woken by any") {
  TwoHosts bed;
  Transport& t = *bed.routed[0];
  Recorder& near = *bed.near[0];
  Recorder& far = *bed.far[0];
  EventFd nearBell, farBell;
  near.wakeFd = nearBell.fd;
  far.wakeFd = farBell.fd;
  SECTION("nothing busy: no sleep, nothing armed") {
    CHECK_FALSE(t.busy());
    CHECK_FALSE(t.waitForActivity(kForeverUs));
    CHECK(near.armCalls + far.armCalls == 0);
  }
  SECTION("one way busy: only it is armed") {
    far.isBusy = true;
    CHECK(t.busy());
    farBell.signal();
    CHECK(t.waitForActivity(kForeverUs));
    CHECK(far.armCalls == 1);
    CHECK(far.disarmCalls == 1);
    CHECK(near.armCalls == 0);
  }
  SECTION("both busy: news on either way ends the sleep") {
    near.isBusy = far.isBusy = true;
    const bool nearNews = GENERATE(true, false);
    (nearNews ? nearBell : farBell).signal();
    CHECK(t.waitForActivity(kForeverUs));
    CHECK(near.disarmCalls == 1);
    CHECK(far.disarmCalls == 1);
  }
  SECTION("a way with news already: no sleep, the ways armed before it disarmed") {
    near.isBusy = far.isBusy = true;
    far.wakeFd = Transport::kWakeNow;
    CHECK(t.waitForActivity(kForeverUs));
    CHECK(near.disarmCalls == 1);
    CHECK(far.disarmCalls == 0);  // kWakeNow leaves nothing armed
  }
  SECTION("a way that cannot wake a sleeper: false, the ways armed before it disarmed") {
    near.isBusy = far.isBusy = true;
    far.wakeFd = Transport::kCannotWake;
    CHECK_FALSE(t.waitForActivity(kForeverUs));
    CHECK(near.disarmCalls == 1);
    CHECK(far.disarmCalls == 0);
  }
}

TEST_CASE("routed: flush, close and lostPeer reach every way") {
  TwoHosts bed;
  Transport& t = *bed.routed[3];
  bed.near[3]->flushed = false;
  CHECK_FALSE(t.flush());
  CHECK(bed.far[3]->flushCalls == 1);  // flushed although the first way was not done
  bed.near[3]->flushed = true;
  CHECK(t.flush());
  CHECK(t.lostPeer().empty());
  bed.far[3]->lost = "rank 0: process 42 exited";
  CHECK(t.lostPeer() == "rank 0: process 42 exited");
  bed.near[3]->lost = "rank 2: process 43 exited";
  CHECK(t.lostPeer() == "rank 2: process 43 exited");
  t.close(Deadline::afterMs(1000));
  CHECK(bed.near[3]->closeCalls == 1);
  CHECK(bed.far[3]->closeCalls == 1);
}

TEST_CASE("routed: bad routes and peers are internal errors") {
  auto twoWays = [] {
    std::vector<std::unique_ptr<Transport>> ways;
    ways.push_back(std::move(createLoopbackTransports(1)[0]));
    ways.push_back(std::move(createLoopbackTransports(1)[0]));
    return ways;
  };
  auto resultOf = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.result();
    }
    return weftSuccess;
  };
  CHECK(resultOf([&] { createRoutedTransport({}, {}); }) == weftInternalError);
  CHECK(resultOf([&] { createRoutedTransport(twoWays(), {Route{2, 0}}); }) == weftInternalError);
  auto t = createRoutedTransport(twoWays(), {Route{0, 0}});
  uint64_t x = 0;
  Request req;
  CHECK(resultOf([&] { t->postSend(1, 0, &x, 8, &req); }) == weftInternalError);
  CHECK(resultOf([&] { t->postRecv(-1, 0, &x, 8, &req); }) == weftInternalError);
}

}  // namespace
}  // namespace weft
