// Withdrawing requests from the shm transport (ranks as threads): cancel of receives and of
// sends at every stage, and what it does to the pair; requests the transport refuses.
#include <algorithm>
#include <catch2/catch.hpp>

#include "lib/base/error.hpp"
#include "shm_test_util.hpp"
#include "support/thread_oob.hpp"

using namespace weft;
using namespace weft::test;

TEST_CASE("cancel finishes a receive that never matches, and close still works") {
  std::string errors =
      runThreads(2, ShmCopy::kAuto, [&](int rank, OutOfBand& oob, Transport& t, const Stop&) {
        std::vector<uint8_t> buf(4096, 0x11), self(64, 0x22);
        Request fromPeer, fromSelf;
        t.postRecv(1 - rank, 0x123, buf.data(), buf.size(), &fromPeer);
        t.postRecv(rank, 0x124, self.data(), self.size(), &fromSelf);
        for (int i = 0; i < 1000; ++i) t.progress();
        expect(!fromPeer.finished() && !fromSelf.finished(), "an unmatched receive finished");
        t.cancel(&fromPeer);
        t.cancel(&fromSelf);
        expect(fromPeer.state.load() == Request::kCancelled, "receive from peer not Cancelled");
        expect(fromSelf.state.load() == Request::kCancelled, "receive from self not Cancelled");
        expect(fromPeer.handle == nullptr, "handle kept after cancel");
        t.cancel(&fromPeer);  // cancelling a finished request changes nothing
        expect(fromPeer.state.load() == Request::kCancelled, "second cancel changed the state");
        expect(std::all_of(buf.begin(), buf.end(), [](uint8_t b) { return b == 0x11; }),
               "cancelled receive wrote its buffer");
        barrierAndClose(t, oob);
      });
  INFO(errors);
  CHECK(errors.empty());
}

TEST_CASE("cancel of a large send nobody took finishes it and breaks the pair on both sides") {
  for (ShmCopy copy : {ShmCopy::kDirect, ShmCopy::kMailbox}) {
    DYNAMIC_SECTION("copy " << shmCopyName(copy)) {
      std::string senderLater, receiverPending;
      std::string errors =
          runThreads(2, copy, [&](int rank, OutOfBand& oob, Transport& t, const Stop& stop) {
            std::vector<uint8_t> big = patterned(4 << 20, 5), small(8);
            if (rank == 0) {
              Request send;
              t.postSend(1, 0x77, big.data(), big.size(), &send);
              for (int i = 0; i < 100; ++i) t.progress();
              t.cancel(&send);
              expect(send.state.load() == Request::kCancelled, "cancelled send not Cancelled");
              big.assign(big.size(), 0);  // the buffer is ours again
              Request later;
              t.postSend(1, 0x78, small.data(), small.size(), &later);
              expect(later.state.load() == Request::kFailed, "send after the cancel did not fail");
              senderLater = later.error;
              oob.barrier(testDeadline());
            } else {
              Request pending;
              t.postRecv(0, 0x79, small.data(), small.size(), &pending);
              oob.barrier(testDeadline());  // the sender cancelled; this rank notices on progress
              waitFinished(t, {&pending}, "receive from the broken pair", stop);
              expect(pending.state.load() == Request::kFailed,
                     "receive from broken pair not Failed");
              receiverPending = pending.error;
            }
            barrierAndClose(t, oob);
          });
      INFO(errors);
      REQUIRE(errors.empty());
      CHECK_THAT(senderLater, Catch::StartsWith("rank 0: send to rank 1 (tag 0x78, 8 bytes)") &&
                                  Catch::Contains("pair with rank 1 is broken"));
      CHECK_THAT(receiverPending,
                 Catch::StartsWith("rank 1: recv from rank 0 (tag 0x79, 8 bytes) failed") &&
                     Catch::Contains("rank 0 broke the pair"));
    }
  }
}

TEST_CASE("cancel of a large receive at any point of its transfer leaves the pair usable") {
  for (ShmCopy copy : {ShmCopy::kDirect, ShmCopy::kMailbox}) {
    for (int spins : {0, 3, 30, 300}) {
      DYNAMIC_SECTION("copy " << shmCopyName(copy) << ", cancel after " << spins << " progress") {
        std::string errors =
            runThreads(2, copy, [&](int rank, OutOfBand& oob, Transport& t, const Stop& stop) {
              std::vector<uint8_t> big = patterned(8 << 20, 1), after = patterned(300000, 2);
              Request req, next;
              if (rank == 0) {
                t.postSend(1, 1, big.data(), big.size(), &req);
                oob.barrier(testDeadline());
                waitFinished(t, {&req}, "send whose receive is cancelled", stop);
                // Done if the receiver had it all before cancelling, else failed: withdrawn.
                expect(
                    req.state.load() == Request::kDone ||
                        req.error.find("rank 1 withdrew the matching receive") != std::string::npos,
                    "unexpected send outcome: " + req.error);
                t.postSend(1, 2, after.data(), after.size(), &next);
                waitDone(t, {&next}, "send after the cancel", stop);
              } else {
                std::vector<uint8_t> in(big.size());
                oob.barrier(testDeadline());
                t.progress();  // drains the record the send wrote before the barrier
                t.postRecv(0, 1, in.data(), in.size(), &req);  // matched: the transfer starts
                for (int i = 0; i < spins; ++i) t.progress();
                t.cancel(&req);
                expect(req.finished(), "cancelled receive not finished");
                std::vector<uint8_t> got(after.size());
                t.postRecv(0, 2, got.data(), got.size(), &next);
                waitDone(t, {&next}, "receive after the cancel", stop);
                expectPattern(got, got.size(), 2, "message after the cancel");
              }
              barrierAndClose(t, oob);
            });
        INFO(errors);
        CHECK(errors.empty());
      }
    }
  }
}

TEST_CASE("peers off this host, wide tags and kDirect across processes are refused") {
  std::string errors =
      runThreads(2, ShmCopy::kAuto, [&](int rank, OutOfBand& oob, Transport& t, const Stop&) {
        if (rank == 0) {
          uint8_t byte = 0;
          Request req;
          auto refused = [&](auto post) {
            try {
              post();
            } catch (const Error& e) {
              return e.result() == weftInternalError;
            }
            return false;
          };
          expect(refused([&] { t.postSend(2, 0, &byte, 1, &req); }), "peer 2 accepted");
          expect(refused([&] { t.postRecv(-1, 0, &byte, 1, &req); }), "peer -1 accepted");
          expect(refused([&] { t.postSend(1, kTagMask + 1, &byte, 1, &req); }),
                 "45-bit tag accepted");
        }
        barrierAndClose(t, oob);
      });
  INFO(errors);
  CHECK(errors.empty());

  ThreadOobGroup group(2);
  std::vector<std::string> messages(2);
  const std::string name = uniqueSegmentName();
  auto failures = runRanks(group, [&](int rank, OutOfBand& oob) {
    ShmRank r = makeShmRank(oob, name, ShmCopy::kAuto, true);
    LocalGroup g = r.group;
    g.oneProcess = false;
    g.pids[1 - rank] = 1;  // pretend the peer is another process
    ShmTransportOptions options;
    options.copy = ShmCopy::kDirect;
    try {
      createShmTransport(*r.segment, g, options);
    } catch (const Error& e) {
      if (e.result() == weftInvalidUsage) messages[rank] = e.what();
    }
  });
  REQUIRE(joinErrors(failures).empty());
  CHECK_THAT(messages[0], Catch::Contains("rank 0: ShmCopy::kDirect needs every local rank in "
                                          "this process, but rank 1 is process 1"));
}
