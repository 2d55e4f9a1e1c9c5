// Indicative numbers, not a test (hidden: run `weft-test-shm-perf "[.perf]"`): two ranks as
// processes (and, for kDirect, as threads) ping-pong 8 B and 16 MiB over the shm transport with
// each copy mechanism, and over the UCX transport (its default: UCX's shared memory on this
// host). Half round trip, and bandwidth = bytes / half round trip.
#include <catch2/catch.hpp>
#include <cstdio>

#include "process_ranks.hpp"
#include "shm_test_util.hpp"
#include "support/thread_oob.hpp"
#include "transports/ucx/ucx_transport.hpp"

using namespace weft;
using namespace weft::test;

namespace {

using MakeTransport = std::function<std::unique_ptr<Transport>(OutOfBand&)>;

// Rank 0's half round trip in microseconds, over `iters` after `warmup` round trips.
double pingPong(Transport& t, OutOfBand& oob, size_t bytes, int warmup, int iters) {
  std::vector<uint8_t> out(bytes, 1), in(bytes);
  const int rank = oob.rank(), peer = 1 - rank;
  Clock::time_point start;
  for (int i = 0; i < warmup + iters; ++i) {
    if (i == warmup) {
      oob.barrier(testDeadline());
      start = Clock::now();
    }
    Request send, recv;
    if (rank == 0) {
      t.postRecv(peer, 1, in.data(), bytes, &recv);
      t.postSend(peer, 0, out.data(), bytes, &send);
      waitDone(t, {&send, &recv}, "ping");
    } else {
      t.postRecv(peer, 0, in.data(), bytes, &recv);
      waitDone(t, {&recv}, "ping");
      t.postSend(peer, 1, out.data(), bytes, &send);
      waitDone(t, {&send}, "pong");
    }
  }
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iters / 2;
}

void report(const std::string& what, const MakeTransport& make, bool threads) {
  double small = 0, large = 0;
  auto body = [&](OutOfBand& oob) {
    auto t = make(oob);
    double s = pingPong(*t, oob, 8, 2000, 20000);
    double l = pingPong(*t, oob, 16 << 20, 3, 20);
    barrierAndClose(*t, oob);
    return std::make_pair(s, l);
  };
  if (threads) {
    ThreadOobGroup group(2);
    auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
      auto [s, l] = body(oob);
      if (rank == 0) small = s, large = l;
    });
    REQUIRE(joinErrors(errors).empty());
  } else {
    auto outcomes = runProcesses(2, [&](int rank, ProcessOob& oob) {
      auto [s, l] = body(oob);
      if (rank == 0) oob.note(fmt::format("{} {}", s, l));
    });
    REQUIRE(joinErrors(outcomes).empty());
    std::sscanf(outcomes[0].note.c_str(), "%lf %lf", &small, &large);
  }
  std::printf("%-34s 8 B: %6.2f us half round trip; 16 MiB: %6.0f us, %5.2f GB/s\n", what.c_str(),
              small, large, (16 << 20) / large / 1e3);
  std::fflush(stdout);
}

// Keeps the segment alive as long as the transport.
class OwningShm final : public Transport {
 public:
  explicit OwningShm(ShmRank rank) : rank_(std::move(rank)) {}
  const char* name() const override { return rank_.transport->name(); }
  void postSend(int p, uint64_t tag, const void* b, size_t n, Request* r) override {
    rank_.transport->postSend(p, tag, b, n, r);
  }
  void postRecv(int p, uint64_t tag, void* b, size_t n, Request* r) override {
    rank_.transport->postRecv(p, tag, b, n, r);
  }
  bool progress() override { return rank_.transport->progress(); }
  void cancel(Request* r) override { rank_.transport->cancel(r); }
  void close(Deadline d) override { rank_.transport->close(d); }

 private:
  ShmRank rank_;
};

MakeTransport shm(ShmCopy copy, bool threads) {
  const std::string name = uniqueSegmentName();
  return [=](OutOfBand& oob) -> std::unique_ptr<Transport> {
    return std::make_unique<OwningShm>(makeShmRank(oob, name, copy, threads));
  };
}

}  // namespace

TEST_CASE("shm and ucx ping-pong latency and bandwidth between two ranks", "[.perf]") {
  report("shm cma (processes)", shm(ShmCopy::kCma, false), false);
  report("shm mailbox (processes)", shm(ShmCopy::kMailbox, false), false);
  report("shm auto (processes)", shm(ShmCopy::kAuto, false), false);
  report("shm direct (threads)", shm(ShmCopy::kDirect, true), true);
  report("shm mailbox (threads)", shm(ShmCopy::kMailbox, true), true);
  report(
      "ucx default (processes)",
      [](OutOfBand& oob) {
        UcxTransportOptions options;
        options.setupDeadline = testDeadline();
        return createUcxTransport(oob, options);
      },
      false);
  report(
      "ucx default (threads)",
      [](OutOfBand& oob) {
        UcxTransportOptions options;
        options.setupDeadline = testDeadline();
        return createUcxTransport(oob, options);
      },
      true);
}
