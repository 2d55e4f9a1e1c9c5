// The shm transport between ranks that are threads of this process, with each way of taking
// large messages forced: data moves intact at every size, receives match (peer, tag) whatever
// the posting order, sizes that disagree fail the receive, unexpected messages never block the
// ring, and more large sends than tickets wait their turn.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <catch2/catch.hpp>
#include <numeric>
#include <random>

#include "lib/base/error.hpp"
#include "shm_test_util.hpp"
#include "support/thread_oob.hpp"

using namespace weft;
using namespace weft::test;

namespace {

// A deterministic permutation of 0..n-1.
std::vector<int> shuffled(int n, uint32_t seed) {
  std::vector<int> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

const std::vector<ShmCopy> kThreadCopies = {ShmCopy::kDirect, ShmCopy::kMailbox, ShmCopy::kCma};

}  // namespace

TEST_CASE("two rank threads ping-pong 0 B to 16 MiB intact with every copy mechanism") {
  const std::vector<size_t> sizes = {0, 1, 8, 4096, 65536, 1 << 20, 16 << 20};
  for (ShmCopy copy : kThreadCopies) {
    DYNAMIC_SECTION("copy " << shmCopyName(copy)) {
      std::string errors =
          runThreads(2, copy, [&](int rank, OutOfBand& oob, Transport& t, const Stop& stop) {
            const int peer = 1 - rank;
            for (size_t s = 0; s < sizes.size(); ++s) {
              const size_t bytes = sizes[s];
              for (uint64_t iter = 0; iter < 3; ++iter) {
                const uint64_t pingSeed = s * 100 + iter * 2, pongSeed = pingSeed + 1;
                const uint64_t pingTag = s * 16 + iter * 2, pongTag = pingTag + 1;
                std::vector<uint8_t> in(bytes + 1, 0xAB);  // one guard byte past the message
                Request send, recv;
                if (rank == 0) {
                  std::vector<uint8_t> out = patterned(bytes, pingSeed);
                  t.postRecv(peer, pongTag, in.data(), bytes, &recv);
                  t.postSend(peer, pingTag, out.data(), bytes, &send);
                  waitDone(t, {&send, &recv}, "ping", stop);
                  expectPattern(in, bytes, pongSeed, fmt::format("pong of {} bytes", bytes));
                } else {
                  t.postRecv(peer, pingTag, in.data(), bytes, &recv);
                  waitDone(t, {&recv}, "ping recv", stop);
                  expectPattern(in, bytes, pingSeed, fmt::format("ping of {} bytes", bytes));
                  std::vector<uint8_t> out = patterned(bytes, pongSeed);
                  t.postSend(peer, pongTag, out.data(), bytes, &send);
                  waitDone(t, {&send}, "pong send", stop);
                }
                expect(recv.bytes == bytes, fmt::format("recv.bytes {} != {}", recv.bytes, bytes));
                expect(send.bytes == bytes, fmt::format("send.bytes {} != {}", send.bytes, bytes));
                expect(in[bytes] == 0xAB,
                       fmt::format("guard byte after {} bytes overwritten", bytes));
              }
            }
            barrierAndClose(t, oob);
          });
      INFO(errors);
      CHECK(errors.empty());
    }
  }
}

TEST_CASE("rank threads that sleep in waitForActivity are woken by their peer's doorbell") {
  for (ShmCopy copy : {ShmCopy::kDirect, ShmCopy::kMailbox}) {
    DYNAMIC_SECTION("copy " << shmCopyName(copy)) {
      std::string errors =
          runThreads(2, copy, [&](int rank, OutOfBand& oob, Transport& t, const Stop& stop) {
            sleepingPingPong(t, rank, stop);
            barrierAndClose(t, oob);
          });
      INFO(errors);
      CHECK(errors.empty());
    }
  }
}

// A rank whose doorbell address is taken (here by the test itself) cannot be woken: it says so
// (waitForActivity returns false, so the executor yields and naps) and messages still flow.
TEST_CASE("a rank without a doorbell does not sleep, and its messages still arrive") {
  const std::string name = uniqueSegmentName();
  // Rank 1's doorbell: "weft-doorbell" + the segment's name ("/weft-<name>-<leader rank>") +
  // "-<local rank>", in the abstract namespace.
  const int squatter = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(squatter >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string taken = fmt::format("weft-doorbell/weft-{}-0-1", name);
  std::memcpy(address.sun_path + 1, taken.data(), taken.size());
  REQUIRE(bind(squatter, reinterpret_cast<const sockaddr*>(&address),
               static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + taken.size())) == 0);
  ThreadOobGroup group(2);
  auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
    ShmRank r = makeShmRank(oob, name, ShmCopy::kDirect, /*threads=*/true);
    Transport& t = r.t();
    const int peer = 1 - rank;
    std::vector<uint8_t> out = patterned(1 << 20, 5), in(1 << 20);
    Request send, recv;
    t.postRecv(peer, 1, in.data(), in.size(), &recv);
    t.postSend(peer, 1, out.data(), out.size(), &send);
    if (rank == 1) expect(!t.waitForActivity(1000), "rank 1 slept without a doorbell");
    waitDone(t, {&send, &recv}, "exchange", [&group] { return group.aborted(); });
    expectPattern(in, in.size(), 5, "1 MiB without a doorbell");
    barrierAndClose(t, oob);
  });
  close(squatter);
  INFO(joinErrors(errors));
  CHECK(joinErrors(errors).empty());
}

TEST_CASE("many outstanding messages with distinct tags match whatever the posting order") {
  const int kMessages = 96;
  const std::vector<size_t> sizes = {0, 7, 100, 4096, 9000, 70000, 300000};
  auto sizeOf = [&](int i) { return sizes[static_cast<size_t>(i) % sizes.size()]; };
  auto tagOf = [](int i) { return (uint64_t(i) * 0x9E3779B97F4Aull + 0x5A5) & kTagMask; };
  for (ShmCopy copy : {ShmCopy::kDirect, ShmCopy::kMailbox}) {
    for (bool sendsFirst : {true, false}) {
      DYNAMIC_SECTION("copy " << shmCopyName(copy) << ", "
                              << (sendsFirst ? "sends posted first" : "receives posted first")) {
        std::string errors =
            runThreads(2, copy, [&](int rank, OutOfBand& oob, Transport& t, const Stop& stop) {
              std::vector<Request> reqs(kMessages);
              std::vector<Request*> all;
              for (Request& r : reqs) all.push_back(&r);
              std::vector<std::vector<uint8_t>> bufs(kMessages);
              auto postSends = [&] {  // in order, or reversed when receives went first
                for (int k = 0; k < kMessages; ++k) {
                  int i = sendsFirst ? k : kMessages - 1 - k;
                  bufs[i] = patterned(sizeOf(i), 1000 + i);
                  t.postSend(1, tagOf(i), bufs[i].data(), sizeOf(i), &reqs[i]);
                }
              };
              auto postRecvs = [&] {
                for (int i : shuffled(kMessages, 7)) {
                  bufs[i].assign(sizeOf(i), 0);
                  t.postRecv(0, tagOf(i), bufs[i].data(), sizeOf(i), &reqs[i]);
                }
              };
              if ((rank == 0) == sendsFirst) {
                rank == 0 ? postSends() : postRecvs();
                oob.barrier(testDeadline());
              } else {
                oob.barrier(testDeadline());
                rank == 0 ? postSends() : postRecvs();
              }
              waitDone(t, all, "messages", stop);
              if (rank == 1) {
                for (int i = 0; i < kMessages; ++i) {
                  expectPattern(bufs[i], sizeOf(i), 1000 + i, fmt::format("message {}", i));
                }
              }
              barrierAndClose(t, oob);
            });
        INFO(errors);
        CHECK(errors.empty());
      }
    }
  }
}

TEST_CASE("4 and 8 ranks exchange all-to-all, self included, one tag told apart by sender") {
  for (int n : {4, 8}) {
    for (ShmCopy copy : {ShmCopy::kAuto, ShmCopy::kMailbox}) {
      for (size_t bytes : {size_t{64}, size_t{200000}}) {
        DYNAMIC_SECTION(n << " ranks, copy " << shmCopyName(copy) << ", " << bytes << " bytes") {
          std::string errors =
              runThreads(n, copy, [&](int rank, OutOfBand& oob, Transport& t, const Stop& stop) {
                auto seed = [&](int src, int dst) { return uint64_t(src) * 64 + dst + bytes; };
                std::vector<Request> sends(n), recvs(n);
                std::vector<std::vector<uint8_t>> out(n), in(n);
                std::vector<Request*> all;
                for (int p = 0; p < n; ++p) {
                  in[p].assign(bytes, 0);
                  t.postRecv(p, /*tag=*/7, in[p].data(), bytes, &recvs[p]);
                  all.push_back(&recvs[p]);
                }
                for (int k = 1; k <= n; ++k) {  // a different peer first on every rank
                  int p = (rank + k) % n;
                  out[p] = patterned(bytes, seed(rank, p));
                  t.postSend(p, 7, out[p].data(), bytes, &sends[p]);
                  all.push_back(&sends[p]);
                }
                waitDone(t, all, "all-to-all", stop);
                for (int p = 0; p < n; ++p) {
                  expectPattern(in[p], bytes, seed(p, rank), fmt::format("from rank {}", p));
                }
                barrierAndClose(t, oob);
              });
          INFO(errors);
          CHECK(errors.empty());
        }
      }
    }
  }
}

TEST_CASE("a send to self is received through the same matching, before or after its receive") {
  for (ShmCopy copy : {ShmCopy::kAuto, ShmCopy::kDirect, ShmCopy::kMailbox, ShmCopy::kCma}) {
    DYNAMIC_SECTION("copy " << shmCopyName(copy)) {
      std::string errors =
          runThreads(1, copy, [&](int, OutOfBand& oob, Transport& t, const Stop& stop) {
            uint64_t tag = 1;
            for (size_t bytes : {size_t{0}, size_t{100}, size_t{8192}, size_t{3 << 20}}) {
              for (bool recvFirst : {true, false}) {
                std::vector<uint8_t> out = patterned(bytes, tag), in(bytes, 0);
                Request send, recv;
                if (recvFirst) t.postRecv(0, tag, in.data(), bytes, &recv);
                t.postSend(0, tag, out.data(), bytes, &send);
                if (!recvFirst) t.postRecv(0, tag, in.data(), bytes, &recv);
                waitDone(t, {&send, &recv}, "self", stop);
                expectPattern(in, bytes, tag, fmt::format("self message of {} bytes", bytes));
                ++tag;
              }
            }
            barrierAndClose(t, oob);
          });
      INFO(errors);
      CHECK(errors.empty());
    }
  }
}

TEST_CASE(
    "a receive whose size differs from the send fails with both sizes and writes nothing past its "
    "buffer") {
  struct Case {
    size_t sent, expected;
  };
  const std::vector<Case> cases = {
      {100, 64}, {64, 100}, {8, 0}, {0, 8}, {1 << 20, 512 << 10}, {512 << 10, 1 << 20}};
  for (ShmCopy copy : {ShmCopy::kDirect, ShmCopy::kMailbox}) {
    for (bool recvFirst : {true, false}) {
      DYNAMIC_SECTION("copy " << shmCopyName(copy) << (recvFirst ? ", receive first" : "")) {
        std::vector<std::string> messages(cases.size());
        std::string errors =
            runThreads(2, copy, [&](int rank, OutOfBand& oob, Transport& t, const Stop& stop) {
              for (size_t c = 0; c < cases.size(); ++c) {
                const uint64_t tag = 0x40 + c;
                Request req;
                if (rank == 0) {
                  std::vector<uint8_t> out = patterned(cases[c].sent, c);
                  if (recvFirst) oob.barrier(testDeadline());
                  t.postSend(1, tag, out.data(), out.size(), &req);
                  waitFinished(t, {&req}, "mismatched send", stop);
                  expect(req.state.load() == Request::kDone,
                         fmt::format("case {}: the sender's request ended {}: {}", c,
                                     stateName(req.state.load()), req.error));
                } else {
                  const size_t guard = 4096;
                  std::vector<uint8_t> in(cases[c].expected + guard, 0xEE);
                  t.postRecv(0, tag, in.data(), cases[c].expected, &req);
                  if (recvFirst) oob.barrier(testDeadline());
                  waitFinished(t, {&req}, "mismatched recv", stop);
                  expect(req.state.load() == Request::kFailed,
                         fmt::format("case {}: recv not Failed", c));
                  messages[c] = req.error;
                  for (size_t i = 0; i < in.size(); ++i) {
                    expect(in[i] == 0xEE, fmt::format("case {}: byte {} written", c, i));
                  }
                }
                oob.barrier(testDeadline());
              }
              // The pair still works afterwards.
              std::vector<uint8_t> buf = patterned(100000, 99);
              Request req;
              if (rank == 0) {
                t.postSend(1, 0x99, buf.data(), buf.size(), &req);
              } else {
                buf.assign(buf.size(), 0);
                t.postRecv(0, 0x99, buf.data(), buf.size(), &req);
              }
              waitDone(t, {&req}, "message after mismatches", stop);
              if (rank == 1) expectPattern(buf, buf.size(), 99, "message after mismatches");
              barrierAndClose(t, oob);
            });
        INFO(errors);
        REQUIRE(errors.empty());
        for (size_t c = 0; c < cases.size(); ++c) {
          CHECK(messages[c] ==
                fmt::format("rank 1: message from rank 0 (tag {:#x}) has {} bytes, expected {}",
                            0x40 + c, cases[c].sent, cases[c].expected));
        }
      }
    }
  }
}

TEST_CASE("unexpected messages far beyond the ring's size are drained while nothing is posted") {
  // 2000 eager messages of 1000 bytes (2 MB through a 64 KiB record ring): every send completes
  // while the receiver only progresses; then it receives them in reverse order.
  const int kMessages = 2000;
  std::atomic<bool> sent{false};
  std::string errors =
      runThreads(2, ShmCopy::kAuto, [&](int rank, OutOfBand& oob, Transport& t, const Stop& stop) {
        std::vector<Request> reqs(kMessages);
        std::vector<Request*> all;
        for (Request& r : reqs) all.push_back(&r);
        std::vector<std::vector<uint8_t>> bufs(kMessages);
        if (rank == 0) {
          for (int i = 0; i < kMessages; ++i) {
            bufs[i] = patterned(1000, i);
            t.postSend(1, i, bufs[i].data(), 1000, &reqs[i]);
          }
          waitDone(t, all, "unexpected sends", stop);
          sent.store(true);
        } else {
          Deadline d = testDeadline();
          while (!sent.load() && !d.expired() && !stop()) {
            if (!t.progress()) std::this_thread::yield();
          }
          for (int i = kMessages; i-- > 0;) {
            bufs[i].assign(1000, 0);
            t.postRecv(0, i, bufs[i].data(), 1000, &reqs[i]);
          }
          waitDone(t, all, "late receives", stop);
          for (int i = 0; i < kMessages; ++i) expectPattern(bufs[i], 1000, i, "late receive");
        }
        barrierAndClose(t, oob);
      });
  INFO(errors);
  CHECK(errors.empty());
}

TEST_CASE("more large sends than tickets wait their turn and all arrive") {
  const int kMessages = 600;  // beyond the 256 tickets of a pair
  for (ShmCopy copy : {ShmCopy::kDirect, ShmCopy::kMailbox}) {
    DYNAMIC_SECTION("copy " << shmCopyName(copy)) {
      std::string errors =
          runThreads(2, copy, [&](int rank, OutOfBand& oob, Transport& t, const Stop& stop) {
            const size_t bytes = 20000;
            std::vector<Request> reqs(kMessages);
            std::vector<Request*> all;
            for (Request& r : reqs) all.push_back(&r);
            std::vector<std::vector<uint8_t>> bufs(kMessages);
            if (rank == 0) {
              for (int i = 0; i < kMessages; ++i) {
                bufs[i] = patterned(bytes, i);
                t.postSend(1, i, bufs[i].data(), bytes, &reqs[i]);
              }
              oob.barrier(testDeadline());
            } else {
              oob.barrier(testDeadline());
              for (int i = kMessages; i-- > 0;) {
                bufs[i].assign(bytes, 0);
                t.postRecv(0, i, bufs[i].data(), bytes, &reqs[i]);
              }
            }
            waitDone(t, all, "ticketed messages", stop);
            if (rank == 1) {
              for (int i = 0; i < kMessages; ++i) expectPattern(bufs[i], bytes, i, "ticketed");
            }
            barrierAndClose(t, oob);
          });
      INFO(errors);
      CHECK(errors.empty());
    }
  }
}
