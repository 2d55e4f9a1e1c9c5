// Indicative numbers, not a test (hidden: run `weft-test-ucx "[.perf]"`): two ranks as threads,
// ping-pong of 8 B and 16 MiB, with the default (shared memory on this host) and with UCX peer
// error handling (tcp loopback on this host). Half round trip and bandwidth = bytes / half trip.
#include <catch2/catch.hpp>
#include <cstdio>

#include "ucx_test_util.hpp"

using namespace weft;
using namespace weft::test;

namespace {

double pingPongHalfTripUs(bool peerErrorHandling, size_t bytes, int warmup, int iters) {
  std::vector<double> result(2, 0);
  ThreadOobGroup group(2);
  auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
    UcxTransportOptions options;
    options.peerErrorHandlingOnHost = peerErrorHandling;
    auto t = makeUcx(oob, options);
    std::vector<uint8_t> out(bytes, 1), in(bytes);
    const int peer = 1 - rank;
    Clock::time_point start;
    for (int i = 0; i < warmup + iters; ++i) {
      if (i == warmup) {
        oob.barrier(testDeadline());
        start = Clock::now();
      }
      Request send, recv;
      if (rank == 0) {
        t->postRecv(peer, 1, in.data(), bytes, &recv);
        t->postSend(peer, 0, out.data(), bytes, &send);
        waitDone(*t, {&send, &recv}, "ping", &group);
      } else {
        t->postRecv(peer, 0, in.data(), bytes, &recv);
        waitDone(*t, {&recv}, "ping", &group);
        t->postSend(peer, 1, out.data(), bytes, &send);
        waitDone(*t, {&send}, "pong", &group);
      }
    }
    double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    result[static_cast<size_t>(rank)] = us / iters / 2;
    barrierAndClose(*t, oob);
  });
  REQUIRE(joinErrors(errors).empty());
  return result[0];
}

}  // namespace

TEST_CASE("ucx ping-pong latency and bandwidth between two threads", "[.perf]") {
  for (bool peerErrorHandling : {false, true}) {
    const char* mode = peerErrorHandling ? "peer error handling (tcp)" : "default (shared memory)";
    double small = pingPongHalfTripUs(peerErrorHandling, 8, 2000, 20000);
    double large = pingPongHalfTripUs(peerErrorHandling, 16 << 20, 3, 20);
    std::printf("%-28s 8 B: %.2f us half round trip; 16 MiB: %.0f us, %.2f GB/s\n", mode, small,
                large, (16 << 20) / large / 1e3);
  }
}
