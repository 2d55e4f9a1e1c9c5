// The UCX transport between ranks that are threads of this process: data moves intact at every
// size, receives match (peer, tag) whatever the posting order, sizes that disagree fail the
// receive, cancel and close finish everything.
#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
#include <random>

#include "transports/ucx/tag_layout.hpp"
#include "transports/ucx/ucx_transport_impl.hpp"
#include "ucx_test_util.hpp"

using namespace weft;
using namespace weft::test;

namespace {

// A deterministic permutation of 0..n-1 (different from identity and reverse for n > 3).
std::vector<int> shuffled(int n, uint32_t seed) {
  std::vector<int> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

}  // namespace

TEST_CASE("two ranks ping-pong 0 B to 16 MiB messages intact") {
  const std::vector<size_t> sizes = {0, 1, 8, 4096, 65536, 1 << 20, 16 << 20};
  ThreadOobGroup group(2);
  auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
    auto t = makeUcx(oob);
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
          t->postRecv(peer, pongTag, in.data(), bytes, &recv);
          t->postSend(peer, pingTag, out.data(), bytes, &send);
          waitDone(*t, {&send, &recv}, "ping", &group);
          expectPattern(in, bytes, pongSeed, fmt::format("pong of {} bytes", bytes));
        } else {
          t->postRecv(peer, pingTag, in.data(), bytes, &recv);
          waitDone(*t, {&recv}, "ping recv", &group);
          expectPattern(in, bytes, pingSeed, fmt::format("ping of {} bytes", bytes));
          std::vector<uint8_t> out = patterned(bytes, pongSeed);
          t->postSend(peer, pongTag, out.data(), bytes, &send);
          waitDone(*t, {&send}, "pong send", &group);
        }
        expect(recv.bytes == bytes, fmt::format("recv.bytes {} != {}", recv.bytes, bytes));
        expect(in[bytes] == 0xAB, fmt::format("guard byte after {} bytes overwritten", bytes));
      }
    }
    barrierAndClose(*t, oob);
  });
  INFO(joinErrors(errors));
  CHECK(joinErrors(errors).empty());
}

TEST_CASE("many outstanding messages with distinct tags match whatever the posting order") {
  const int kMessages = 96;
  const std::vector<size_t> sizes = {0, 7, 100, 4096, 9000, 70000, 300000};
  auto sizeOf = [&](int i) { return sizes[static_cast<size_t>(i) % sizes.size()]; };
  // Distinct tags spread over all 44 bits.
  auto tagOf = [](int i) { return (uint64_t(i) * 0x9E3779B97F4Aull + 0x5A5) & kTagMask; };

  for (bool sendsFirst : {true, false}) {
    DYNAMIC_SECTION(
        (sendsFirst ? "sends posted before receives" : "receives posted before sends")) {
      ThreadOobGroup group(2);
      auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
        auto t = makeUcx(oob);
        std::vector<Request> reqs(kMessages);
        std::vector<Request*> all;
        all.reserve(reqs.size());
        for (Request& r : reqs) all.push_back(&r);
        std::vector<std::vector<uint8_t>> bufs(kMessages);
        auto postSends = [&] {  // in order, or reversed when receives went first
          for (int k = 0; k < kMessages; ++k) {
            int i = sendsFirst ? k : kMessages - 1 - k;
            bufs[i] = patterned(sizeOf(i), 1000 + i);
            t->postSend(1, tagOf(i), bufs[i].data(), sizeOf(i), &reqs[i]);
          }
        };
        auto postRecvs = [&] {
          for (int i : shuffled(kMessages, 7)) {
            bufs[i].assign(sizeOf(i), 0);
            t->postRecv(0, tagOf(i), bufs[i].data(), sizeOf(i), &reqs[i]);
          }
        };
        if ((rank == 0) == sendsFirst) {
          rank == 0 ? postSends() : postRecvs();
          oob.barrier(testDeadline());
        } else {
          oob.barrier(testDeadline());
          rank == 0 ? postSends() : postRecvs();
        }
        waitDone(*t, all, "messages", &group);
        if (rank == 1) {
          for (int i = 0; i < kMessages; ++i) {
            expectPattern(bufs[i], sizeOf(i), 1000 + i, fmt::format("message {}", i));
          }
        }
        barrierAndClose(*t, oob);
      });
      INFO(joinErrors(errors));
      CHECK(joinErrors(errors).empty());
    }
  }
}

TEST_CASE("four ranks exchange all-to-all, self included, with one tag told apart by sender") {
  const int n = 4;
  for (size_t bytes : {size_t{64}, size_t{200000}}) {
    DYNAMIC_SECTION(bytes << " bytes") {
      ThreadOobGroup group(n);
      auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
        auto t = makeUcx(oob);
        auto seed = [&](int src, int dst) { return uint64_t(src) * 64 + dst + bytes; };
        std::vector<Request> sends(n), recvs(n);
        std::vector<std::vector<uint8_t>> out(n), in(n);
        std::vector<Request*> all;
        for (int p = 0; p < n; ++p) {
          in[p].assign(bytes, 0);
          t->postRecv(p, /*tag=*/7, in[p].data(), bytes, &recvs[p]);
          all.push_back(&recvs[p]);
        }
        for (int k = 1; k <= n; ++k) {  // a different peer first on every rank
          int p = (rank + k) % n;
          out[p] = patterned(bytes, seed(rank, p));
          t->postSend(p, 7, out[p].data(), bytes, &sends[p]);
          all.push_back(&sends[p]);
        }
        waitDone(*t, all, "all-to-all", &group);
        for (int p = 0; p < n; ++p) {
          expectPattern(in[p], bytes, seed(p, rank), fmt::format("from rank {}", p));
        }
        barrierAndClose(*t, oob);
      });
      INFO(joinErrors(errors));
      CHECK(joinErrors(errors).empty());
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
  ThreadOobGroup group(2);
  std::vector<std::string> messages(cases.size());
  auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
    auto t = makeUcx(oob);
    for (size_t c = 0; c < cases.size(); ++c) {
      const uint64_t tag = 0x40 + c;
      Request req;
      if (rank == 0) {
        std::vector<uint8_t> out = patterned(cases[c].sent, c);
        t->postSend(1, tag, out.data(), out.size(), &req);
        waitFinished(*t, {&req}, "mismatched send", &group);
        expect(req.state.load() == Request::kDone,
               fmt::format("case {}: the sender's request ended in {}: {}", c,
                           static_cast<int>(req.state.load()), req.error));
      } else {
        const size_t guard = 4096;
        std::vector<uint8_t> in(cases[c].expected + guard, 0xEE);
        t->postRecv(0, tag, in.data(), cases[c].expected, &req);
        waitFinished(*t, {&req}, "mismatched recv", &group);
        expect(req.state.load() == Request::kFailed, fmt::format("case {}: recv not Failed", c));
        messages[c] = req.error;
        for (size_t i = cases[c].expected; i < in.size(); ++i) {
          expect(in[i] == 0xEE, fmt::format("case {}: byte {} past the buffer written", c, i));
        }
      }
      oob.barrier(testDeadline());
    }
    // The pair still works afterwards.
    std::vector<uint8_t> buf = patterned(1000, 99);
    Request req;
    if (rank == 0) {
      t->postSend(1, 0x99, buf.data(), buf.size(), &req);
    } else {
      buf.assign(buf.size(), 0);
      t->postRecv(0, 0x99, buf.data(), buf.size(), &req);
    }
    waitDone(*t, {&req}, "message after mismatches", &group);
    if (rank == 1) expectPattern(buf, 1000, 99, "message after mismatches");
    barrierAndClose(*t, oob);
  });
  INFO(joinErrors(errors));
  REQUIRE(joinErrors(errors).empty());
  for (size_t c = 0; c < cases.size(); ++c) {
    CHECK(messages[c] ==
          fmt::format("rank 1: message from rank 0 (tag {:#x}) has {} bytes, expected {}", 0x40 + c,
                      cases[c].sent, cases[c].expected));
  }
}

// The receiver of a rendezvous message owes the sender an acknowledgement after its receive has
// completed. Rank 1 fills rank 0's receive queue with small messages while rank 0 does not
// progress, so that acknowledgement has to wait in rank 1's queue. Once flush() says nothing is
// owed, rank 1 stops calling the transport, as a rank does between operations: rank 0 must still
// finish its send and get every small message.
TEST_CASE("after flush() a receiver owes nothing: the sender completes without its progress") {
  constexpr size_t kLarge = 1 << 20;  // rendezvous on every transport
  constexpr int kSmall = 256;         // more than a receive queue holds (sysv: 64)
  constexpr uint64_t kLargeTag = 1000;
  ThreadOobGroup group(2);
  auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
    auto t = makeUcx(oob);
    const int peer = 1 - rank;
    Request large;
    std::vector<Request> small(kSmall);
    std::vector<Request*> smallReqs;
    for (Request& r : small) smallReqs.push_back(&r);
    std::vector<uint64_t> smallData(kSmall);
    std::vector<uint8_t> largeData =
        rank == 0 ? patterned(kLarge, 42) : std::vector<uint8_t>(kLarge);
    // First a rendezvous message each way with both ranks progressing: UCX 1.13 completes the
    // first rendezvous on an endpoint only while the sender progresses too.
    std::vector<uint64_t> hello(kLarge / 8, static_cast<uint64_t>(rank)), heard(kLarge / 8);
    Request helloSend, helloRecv;
    t->postRecv(peer, kLargeTag + 1, heard.data(), kLarge, &helloRecv);
    t->postSend(peer, kLargeTag + 1, hello.data(), kLarge, &helloSend);
    waitDone(*t, {&helloSend, &helloRecv}, "hello", &group);
    expect(heard[0] == static_cast<uint64_t>(peer), "hello from the wrong rank");
    oob.barrier(testDeadline());
    if (rank == 0) {
      t->postSend(peer, kLargeTag, largeData.data(), kLarge, &large);
      oob.barrier(testDeadline());  // 1: the send is announced; rank 0 stops progressing
      oob.barrier(testDeadline());  // 2: rank 1 has received the large message
      for (int i = 0; i < kSmall; ++i)
        t->postRecv(peer, static_cast<uint64_t>(i), &smallData[static_cast<size_t>(i)],
                    sizeof(uint64_t), &small[static_cast<size_t>(i)]);
      waitDone(*t, smallReqs, "small receives", &group);
      waitDone(*t, {&large}, "large send", &group);
      for (int i = 0; i < kSmall; ++i)
        expect(smallData[static_cast<size_t>(i)] == 7000u + static_cast<uint64_t>(i),
               fmt::format("small message {} holds {}", i, smallData[static_cast<size_t>(i)]));
      oob.barrier(testDeadline());  // 3: rank 0 is done
    } else {
      oob.barrier(testDeadline());  // 1
      for (int i = 0; i < kSmall; ++i) {
        smallData[static_cast<size_t>(i)] = 7000u + static_cast<uint64_t>(i);
        t->postSend(peer, static_cast<uint64_t>(i), &smallData[static_cast<size_t>(i)],
                    sizeof(uint64_t), &small[static_cast<size_t>(i)]);
      }
      t->postRecv(peer, kLargeTag, largeData.data(), kLarge, &large);
      waitDone(*t, {&large}, "large receive", &group);
      expectPattern(largeData, kLarge, 42, "large message");
      oob.barrier(testDeadline());  // 2
      const Deadline deadline = testDeadline();
      while (!t->flush()) {
        if (deadline.expired()) throw std::runtime_error("flush: timed out");
        if (group.aborted()) throw std::runtime_error("flush: another rank failed");
      }
      // Nothing more from this rank until rank 0 is done.
      oob.barrier(testDeadline());  // 3
      waitDone(*t, smallReqs, "small sends", &group);
    }
    barrierAndClose(*t, oob);
  });
  INFO(joinErrors(errors));
  CHECK(joinErrors(errors).empty());
}

TEST_CASE("cancel finishes a receive that never matches, and close still works") {
  ThreadOobGroup group(2);
  auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
    auto t = makeUcx(oob);
    std::vector<uint8_t> buf(4096, 0x11), self(64, 0x22);
    Request fromPeer, fromSelf;
    t->postRecv(1 - rank, 0x123, buf.data(), buf.size(), &fromPeer);
    t->postRecv(rank, 0x124, self.data(), self.size(), &fromSelf);
    for (int i = 0; i < 1000; ++i) t->progress();
    expect(!fromPeer.finished() && !fromSelf.finished(), "an unmatched receive finished");
    t->cancel(&fromPeer);
    t->cancel(&fromSelf);
    expect(fromPeer.state.load() == Request::kCancelled, "receive from peer not Cancelled");
    expect(fromSelf.state.load() == Request::kCancelled, "receive from self not Cancelled");
    expect(fromPeer.handle == nullptr, "handle kept after cancel");
    t->cancel(&fromPeer);  // cancelling a finished request changes nothing
    expect(fromPeer.state.load() == Request::kCancelled, "second cancel changed the state");
    expect(std::all_of(buf.begin(), buf.end(), [](uint8_t b) { return b == 0x11; }),
           "cancelled receive wrote its buffer");
    barrierAndClose(*t, oob);
  });
  INFO(joinErrors(errors));
  CHECK(joinErrors(errors).empty());
}

TEST_CASE("cancel of a send nobody receives finishes it and withdraws the peer") {
  ThreadOobGroup group(2);
  auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
    auto t = makeUcx(oob);
    if (rank == 0) {
      std::vector<uint8_t> big = patterned(4 << 20, 5);  // rendezvous: waits for a receive
      Request send;
      t->postSend(1, 0x77, big.data(), big.size(), &send);
      for (int i = 0; i < 1000; ++i) t->progress();
      t->cancel(&send);
      expect(send.finished(), "cancelled send not finished");
      Request later;
      t->postSend(1, 0x78, big.data(), 8, &later);
      expect(later.state.load() == Request::kFailed, "send after the cancel did not fail");
      expect(later.error.find("rank 0:") == 0 &&
                 later.error.find("connection to rank 1 lost") != std::string::npos,
             "unexpected message: " + later.error);
    }
    barrierAndClose(*t, oob);
  });
  INFO(joinErrors(errors));
  CHECK(joinErrors(errors).empty());
}

TEST_CASE("tag packing puts the sender in the top 20 bits and keeps all 44 tag bits") {
  using namespace weft::ucx;
  STATIC_REQUIRE(kRankBits + kTagBits == 64);
  CHECK(packTag(0, 0) == 0);
  CHECK(packTag(0, kTagMask) == kTagMask);
  CHECK(packTag(1, 0) == (uint64_t{1} << 44));
  const int maxRank = static_cast<int>(kMaxRanks - 1);
  CHECK(packTag(maxRank, kTagMask) == ~uint64_t{0});
  CHECK(packTag(maxRank, 0) == 0xFFFFF00000000000ull);
  for (int rank : {0, 1, 2, 12345, 1 << 19, maxRank}) {
    for (uint64_t tag : {uint64_t{0}, uint64_t{1}, uint64_t{1} << 43, kTagMask, kTagMask - 1,
                         uint64_t{0x0F0F0F0F0F0}}) {
      uint64_t packed = packTag(rank, tag);
      CHECK(tagSender(packed) == rank);
      CHECK(tagUser(packed) == tag);
    }
  }
  CHECK(packTag(3, 5) != packTag(5, 3));
}

TEST_CASE("tags using all 44 bits match the right sender and tag") {
  const std::vector<uint64_t> tags = {
      0, 1, 0x7FF, uint64_t{1} << 43, kTagMask, kTagMask ^ 1, 0x0F0F0F0F0F0, 0xF0F0F0F0F0F};
  ThreadOobGroup group(3);
  auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
    auto t = makeUcx(oob);
    auto seed = [](int src, size_t i) { return uint64_t(src) << 8 | i; };
    const size_t bytes = 256;
    std::vector<Request> sends(tags.size()), recvs(3 * tags.size());
    std::vector<std::vector<uint8_t>> out(tags.size()), in(3 * tags.size());
    std::vector<Request*> all;
    // Every rank sends each tag to rank 1 (rank 1 to itself too), in order.
    for (size_t i = 0; i < tags.size(); ++i) {
      out[i] = patterned(bytes, seed(rank, i));
      t->postSend(1, tags[i], out[i].data(), bytes, &sends[i]);
      all.push_back(&sends[i]);
    }
    if (rank == 1) {  // receives in a scrambled order, alternating senders
      for (int k : shuffled(static_cast<int>(3 * tags.size()), 3)) {
        int src = k % 3;
        size_t i = static_cast<size_t>(k) / 3;
        in[k].assign(bytes, 0);
        t->postRecv(src, tags[i], in[k].data(), bytes, &recvs[k]);
        all.push_back(&recvs[k]);
      }
    }
    waitDone(*t, all, "tagged messages", &group);
    if (rank == 1) {
      for (size_t k = 0; k < in.size(); ++k) {
        expectPattern(in[k], bytes, seed(static_cast<int>(k % 3), k / 3),
                      fmt::format("tag {:#x} from rank {}", tags[k / 3], k % 3));
      }
      // Beyond 44 bits is a caller bug, refused before it could alias another sender.
      Request bad;
      bool threw = false;
      try {
        t->postSend(0, kTagMask + 1, out[0].data(), 1, &bad);
      } catch (const Error& e) {
        threw = e.result() == weftInternalError;
      }
      expect(threw, "a 45-bit tag was accepted");
    }
    barrierAndClose(*t, oob);
  });
  INFO(joinErrors(errors));
  CHECK(joinErrors(errors).empty());
}

namespace {
// Claims more ranks than the tag layout can name; set-up must refuse before exchanging anything.
class HugeOob final : public OutOfBand {
 public:
  int rank() const override { return 0; }
  int nranks() const override { return static_cast<int>(ucx::kMaxRanks) + 1; }
  std::vector<std::vector<uint8_t>> allGather(std::span<const uint8_t>, Deadline) override {
    throw std::logic_error("allGather reached");
  }
  void barrier(Deadline) override { throw std::logic_error("barrier reached"); }
};
}  // namespace

TEST_CASE("more than 2^20 ranks are refused at creation") {
  HugeOob oob;
  try {
    createUcxTransport(oob, UcxTransportOptions{});
    FAIL("created");
  } catch (const Error& e) {
    CHECK(e.result() == weftInvalidUsage);
    CHECK_THAT(e.what(), Catch::Contains("1048576"));
  }
}

TEST_CASE("shared-memory lanes are told apart from network lanes (other hosts refuse them)") {
  using weft::ucx::sharedMemoryLanes;
  CHECK(sharedMemoryLanes("sysv/memory.0, cma/memory.0"));
  CHECK(sharedMemoryLanes("posix/memory.0"));
  CHECK(sharedMemoryLanes("tcp/eth0.0, cma/memory.0"));
  CHECK(sharedMemoryLanes("self/memory.0"));
  CHECK_FALSE(sharedMemoryLanes("tcp/eth0.0"));
  CHECK_FALSE(sharedMemoryLanes("tcp/lo.0, tcp/lo.0"));
  CHECK_FALSE(sharedMemoryLanes("rc_mlx5/mlx5_0:1.0, ud_mlx5/mlx5_0:1.0"));
}

TEST_CASE("a context without sysv, posix or xpmem reaches its host over the network") {
  using weft::ucx::sharedMemoryResources;
  CHECK(sharedMemoryResources("self/memory, tcp/lo, sysv/memory, posix/memory, cma/memory"));
  CHECK(sharedMemoryResources("posix/memory"));
  CHECK(sharedMemoryResources("xpmem/memory, tcp/eth0"));
  CHECK_FALSE(sharedMemoryResources("self/memory, tcp/lo, tcp/eth0"));
  CHECK_FALSE(sharedMemoryResources("tcp/lo, cma/memory, knem/memory"));  // rendezvous copies
  CHECK_FALSE(sharedMemoryResources("rc_mlx5/mlx5_0:1, self/memory"));
  CHECK_FALSE(sharedMemoryResources(""));
}

// A rank with nothing to do sleeps in waitForActivity with a limit far past the test's deadline:
// only the wake-up from an arriving message (eager and rendezvous, over shared memory and over
// tcp) lets the ping-pong finish before the deadline check below fails it.
TEST_CASE("waitForActivity sleeps until a message arrives, over shared memory and tcp") {
  const bool tcp = GENERATE(false, true);
  const std::vector<size_t> sizes = {8, 1 << 20};
  ThreadOobGroup group(2);
  auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
    UcxTransportOptions options;
    options.peerErrorHandlingOnHost = tcp;
    auto t = makeUcx(oob, options);
    const Deadline deadline = testDeadline();
    auto sleepUntil = [&](const std::vector<Request*>& reqs, const char* what) {
      for (;;) {
        if (std::all_of(reqs.begin(), reqs.end(), [](Request* r) { return r->finished(); }))
          return;
        if (t->progress()) continue;
        expect(t->waitForActivity(kTestTimeoutMs * 1000), "ucx cannot wait for activity");
        if (deadline.expired()) throw std::runtime_error(fmt::format("{}: not woken", what));
        if (group.aborted()) throw std::runtime_error("another rank failed");
      }
    };
    const int peer = 1 - rank;
    for (size_t s = 0; s < sizes.size(); ++s) {
      for (uint64_t round = 0; round < 4; ++round) {
        const uint64_t tag = s * 16 + round, seed = tag + 7;
        std::vector<uint8_t> in(sizes[s]);
        std::vector<uint8_t> out = patterned(sizes[s], seed);
        Request send, recv;
        if ((rank == 0) == (round % 2 == 0)) {
          t->postSend(peer, tag, out.data(), out.size(), &send);
          sleepUntil({&send}, "send");
        } else {
          t->postRecv(peer, tag, in.data(), in.size(), &recv);
          sleepUntil({&recv}, "recv");
          expect(recv.state.load() == Request::kDone, "receive did not end Done");
          expectPattern(in, sizes[s], seed, fmt::format("{} bytes woken", sizes[s]));
        }
      }
    }
    barrierAndClose(*t, oob);
  });
  INFO(joinErrors(errors));
  CHECK(joinErrors(errors).empty());
}

// What a communicator spanning hosts asks of UCX (lib/comm, connectHosts): endpoints only to the
// ranks shared memory does not carry, and no shared-memory transports in the worker. Here the
// ranks are threads of one host, where UCX would otherwise pick sysv and cma between them.
TEST_CASE("a transport told its peers connects only to them, networkOnly without sysv/posix/cma") {
  const bool networkOnly = GENERATE(false, true);
  ThreadOobGroup group(3);
  auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
    // Ranks 0 and 1 connect to each other only; rank 2 takes part in the address exchange and
    // connects to itself alone.
    UcxTransportOptions options;
    options.peers = {rank == 2 ? 2 : 1 - rank};
    options.networkOnly = networkOnly;
    auto t = makeUcx(oob, options);
    auto& ucx = dynamic_cast<weft::ucx::UcxTransport&>(*t);
    const std::string resources = ucx.resources();
    expect(resources.find("tcp/") != std::string::npos, "no tcp among " + resources);
    for (const char* shm : {"sysv/", "posix/", "cma/"})
      expect((resources.find(shm) == std::string::npos) == networkOnly,
             fmt::format("networkOnly={}: {}", networkOnly, resources));
    if (rank < 2) {
      const int peer = 1 - rank;
      const std::string lanes = ucx.lanesTo(peer);
      expect(!lanes.empty(), "no endpoint to the peer given");
      expect(weft::ucx::sharedMemoryLanes(lanes) != networkOnly,
             fmt::format("lanes to rank {} with networkOnly={}: {}", peer, networkOnly, lanes));
      expect(ucx.lanesTo(rank).empty() && ucx.lanesTo(2).empty(),
             "an endpoint to a rank left out of peers");
      // A rank left out: what is posted to or from it fails at once, naming it.
      Request toSelf, fromTwo;
      uint8_t byte = 0;
      t->postSend(rank, 1, &byte, 1, &toSelf);
      t->postRecv(2, 1, &byte, 1, &fromTwo);
      for (Request* r : {&toSelf, &fromTwo})
        expect(r->state.load() == Request::kFailed &&
                   r->error.find("is not among the ranks this UCX transport connects to") !=
                       std::string::npos,
               fmt::format("post to a rank left out: state {}, '{}'",
                           static_cast<int>(r->state.load()), r->error));
      // The peer given works at 1 MiB (rendezvous) and 8 B.
      for (size_t bytes : {size_t{1} << 20, size_t{8}}) {
        std::vector<uint8_t> out = patterned(bytes, bytes + rank), in(bytes);
        Request send, recv;
        t->postRecv(peer, bytes, in.data(), bytes, &recv);
        t->postSend(peer, bytes, out.data(), bytes, &send);
        waitDone(*t, {&send, &recv}, "exchange", &group);
        expectPattern(in, bytes, bytes + peer, fmt::format("{} bytes from rank {}", bytes, peer));
      }
    }
    barrierAndClose(*t, oob);
  });
  INFO(joinErrors(errors));
  CHECK(joinErrors(errors).empty());
}

TEST_CASE("a transport asked to connect to a rank that does not exist is refused") {
  ThreadOobGroup group(1);
  auto errors = runRanks(group, [&](int, OutOfBand& oob) {
    UcxTransportOptions options;
    options.peers = {1};
    try {
      makeUcx(oob, options);
      throw std::runtime_error("created");
    } catch (const Error& e) {
      expect(e.result() == weftInvalidUsage &&
                 std::string(e.what()).find("connect to rank 1 of 1") != std::string::npos,
             e.what());
    }
  });
  INFO(joinErrors(errors));
  CHECK(joinErrors(errors).empty());
}

namespace {

// Every rank sends every other rank `messages` messages of `bytes` (tags 0..messages-1, so
// every channel carries some), receives posted in a shuffled order, and checks them.
void exchangeOnEveryChannel(Transport& t, int rank, int nranks, int messages, size_t bytes,
                            const ThreadOobGroup& group) {
  std::vector<std::vector<uint8_t>> out, in;
  std::vector<Request> reqs(static_cast<size_t>(2 * messages * nranks));
  std::vector<Request*> all;
  for (int m : shuffled(messages, static_cast<uint32_t>(rank))) {
    for (int peer = 0; peer < nranks; ++peer) {
      if (peer == rank) continue;
      in.emplace_back(bytes);
      Request* r = &reqs[all.size()];
      all.push_back(r);
      t.postRecv(peer, static_cast<uint64_t>(m), in.back().data(), bytes, r);
    }
  }
  for (int m = 0; m < messages; ++m) {
    for (int peer = 0; peer < nranks; ++peer) {
      if (peer == rank) continue;
      out.push_back(patterned(bytes, static_cast<uint64_t>(m * 1000 + rank * 100 + peer)));
      Request* r = &reqs[all.size()];
      all.push_back(r);
      t.postSend(peer, static_cast<uint64_t>(m), out.back().data(), bytes, r);
    }
  }
  waitDone(t, all, "exchange on every channel", &group);
  size_t i = 0;
  for (int m : shuffled(messages, static_cast<uint32_t>(rank))) {
    for (int peer = 0; peer < nranks; ++peer) {
      if (peer == rank) continue;
      expectPattern(in[i++], bytes, static_cast<uint64_t>(m * 1000 + peer * 100 + rank),
                    fmt::format("message {} ({} bytes) from rank {}", m, bytes, peer));
    }
  }
}

}  // namespace

// UcxTransportOptions::channels: a rank opens that many endpoints to every peer it reaches over
// the network, each its own tcp connection, and sends message k on channel k mod channels. The
// ranks here are threads of one host, given network transports only (as for other hosts).
TEST_CASE("channels: every network peer gets its own connection per channel, messages intact") {
  constexpr int kRanks = 3;
  constexpr size_t kLarge = size_t{256} << 10;
  std::vector<uint64_t> ends[2];
  for (int phase = 0; phase < 2; ++phase) {
    // Phase 0: one channel everywhere. Phase 1: 3, 1 and 2 channels (ranks may differ).
    const int wanted[2][kRanks] = {{1, 1, 1}, {3, 1, 2}};
    ThreadOobGroup group(kRanks);
    auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
      UcxTransportOptions options;
      options.networkOnly = true;
      options.channels = wanted[phase][rank];
      auto t = makeUcx(oob, options);
      auto& ucx = dynamic_cast<weft::ucx::UcxTransport&>(*t);
      for (int peer = 0; peer < kRanks; ++peer) {
        const int expected = peer == rank ? 1 : wanted[phase][rank];
        expect(ucx.channelsTo(peer) == expected, fmt::format("{} channels to rank {}, asked {}",
                                                             ucx.channelsTo(peer), peer, expected));
      }
      for (size_t bytes : {size_t{8}, kLarge})
        exchangeOnEveryChannel(*t, rank, kRanks, 6, bytes, group);
      oob.barrier(testDeadline());
      if (rank == 0) ends[phase] = tcpEndsReceived();
      barrierAndClose(*t, oob);
    });
    INFO(joinErrors(errors));
    REQUIRE(joinErrors(errors).empty());
  }
  auto carried = [&](const std::vector<uint64_t>& e) {
    return std::count_if(e.begin(), e.end(), [&](uint64_t bytes) { return bytes >= kLarge; });
  };
  INFO("established tcp ends: " << ends[0].size() << " with one channel everywhere ("
                                << carried(ends[0]) << " received large messages), "
                                << ends[1].size() << " with 3+1+2 (" << carried(ends[1]) << ")");
  // A pair whose ranks ask for a and b channels holds at least max(a, b) connections: at least
  // 2 more than with one channel between ranks 0 and 1, 2 between 0 and 2, 1 between 1 and 2,
  // each counted twice (both ends are ours).
  CHECK(ends[1].size() >= ends[0].size() + 2 * (2 + 2 + 1));
  // Each rank's large messages (tags 0..5) to a peer arrive at as many ends as it has channels:
  // every channel carried some. One channel: 2 per rank; 3+1+2: (3 + 1 + 2) x 2.
  CHECK(carried(ends[0]) >= 2 * kRanks);
  CHECK(carried(ends[1]) >= 2 * (3 + 1 + 2));
}

TEST_CASE("a transport asked for 0 or 9 channels is refused") {
  const int channels = GENERATE(0, kMaxChannels + 1);
  ThreadOobGroup group(1);
  auto errors = runRanks(group, [&](int, OutOfBand& oob) {
    UcxTransportOptions options;
    options.channels = channels;
    try {
      makeUcx(oob, options);
      throw std::runtime_error("created");
    } catch (const Error& e) {
      expect(e.result() == weftInvalidUsage &&
                 std::string(e.what()).find(
                     fmt::format("1..8 channels per peer, got {}", channels)) != std::string::npos,
             e.what());
    }
  });
  INFO(joinErrors(errors));
  CHECK(joinErrors(errors).empty());
}
