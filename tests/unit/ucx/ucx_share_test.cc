// A UCX worker shared by several communicators (shareUcxTransport, splitShare=1): each has its
// context id and rank numbering, their messages never meet even with equal tags, sharing opens
// no connection, and the worker outlives whichever communicator closes first.
#include <algorithm>
#include <catch2/catch.hpp>

#include "transports/ucx/tag_layout.hpp"
#include "transports/ucx/ucx_transport_impl.hpp"
#include "ucx_test_util.hpp"

using namespace weft;
using namespace weft::test;

namespace {

// Every member sends every other member one message of `bytes` with tag 7, contents seeded by
// (salt, sender, receiver) in the communicator's numbering; the receives go first. Returns the
// requests and buffers so that several communicators' exchanges can be in flight at once.
struct Exchange {
  std::vector<std::vector<uint8_t>> out, in;
  std::vector<Request> reqs;
  std::vector<Request*> all;
  std::vector<int> from;
  uint64_t salt = 0;
};

uint64_t seedOf(uint64_t salt, int from, int to) {
  return salt * 10000 + static_cast<uint64_t>(from) * 100 + static_cast<uint64_t>(to);
}

void postReceives(Transport& t, int rank, int nranks, size_t bytes, uint64_t salt, Exchange& x) {
  x.salt = salt;
  x.reqs = std::vector<Request>(static_cast<size_t>(2 * nranks));
  for (int peer = 0; peer < nranks; ++peer) {
    if (peer == rank) continue;
    x.in.emplace_back(bytes);
    x.from.push_back(peer);
    x.all.push_back(&x.reqs[x.all.size()]);
    t.postRecv(peer, 7, x.in.back().data(), bytes, x.all.back());
  }
}

void postSends(Transport& t, int rank, int nranks, size_t bytes, Exchange& x) {
  for (int peer = 0; peer < nranks; ++peer) {
    if (peer == rank) continue;
    x.out.push_back(patterned(bytes, seedOf(x.salt, rank, peer)));
    x.all.push_back(&x.reqs[x.all.size()]);
    t.postSend(peer, 7, x.out.back().data(), bytes, x.all.back());
  }
}

void postExchange(Transport& t, int rank, int nranks, size_t bytes, uint64_t salt, Exchange& x) {
  postReceives(t, rank, nranks, bytes, salt, x);
  postSends(t, rank, nranks, bytes, x);
}

void checkExchange(const Exchange& x, int rank, size_t bytes, const char* what) {
  for (size_t i = 0; i < x.in.size(); ++i) {
    expectPattern(x.in[i], bytes, seedOf(x.salt, x.from[i], rank),
                  fmt::format("{}: message from rank {}", what, x.from[i]));
  }
}

std::vector<Request*> joined(std::initializer_list<const Exchange*> xs) {
  std::vector<Request*> all;
  for (const Exchange* x : xs) all.insert(all.end(), x->all.begin(), x->all.end());
  return all;
}

}  // namespace

TEST_CASE("tag packing with a context id keeps the sender and the tag and tells contexts apart") {
  using namespace weft::ucx;
  CHECK(rankBitsFor(1) == 0);
  CHECK(rankBitsFor(2) == 1);
  CHECK(rankBitsFor(3) == 2);
  CHECK(rankBitsFor(4) == 2);
  CHECK(rankBitsFor(5) == 3);
  CHECK(rankBitsFor(kMaxRanks) == kRankBits);
  CHECK(maxContextFor(kRankBits) == 0);  // 2^20 ranks: no room, no sharing
  CHECK(maxContextFor(2) == (1u << 18) - 1);
  CHECK(maxContextFor(0) == (1u << 20) - 1);
  // Context 0 is the plain layout.
  CHECK(packTag(0, 2, 3, 0x55) == packTag(3, 0x55));
  CHECK(packTag(1, 2, 3, kTagMask) == ((uint64_t{1} << 46) | (uint64_t{3} << 44) | kTagMask));
  CHECK(packTag(maxContextFor(2), 2, 3, kTagMask) == ~uint64_t{0});
  // Every (context, rank, tag) of a 5-rank worker packs differently.
  std::vector<uint64_t> packed;
  for (uint32_t context : {0u, 1u, 2u, 3u, maxContextFor(3)})
    for (int rank = 0; rank < 5; ++rank)
      for (uint64_t tag : {uint64_t{0}, uint64_t{7}, kTagMask})
        packed.push_back(packTag(context, 3, rank, tag));
  std::sort(packed.begin(), packed.end());
  CHECK(std::adjacent_find(packed.begin(), packed.end()) == packed.end());
}

// Four thread ranks over tcp (networkOnly, as between hosts). Besides the worker's own
// communicator (context 0): context 1, ranks 3 and 1 of it only (numbered 0 and 1), and
// context 2, all four in reverse order. The three exchange at once, every message with tag 7
// and the same size, so only the context tells them apart; every receive is posted before the
// first send, in the opposite order. Then the worker's own communicator closes and the others go
// on.
TEST_CASE("shared worker: contexts keep equal tags apart, open no connection, outlive the first") {
  constexpr int kRanks = 4;
  const size_t bytes = GENERATE(size_t{64}, size_t{300} << 10);  // eager and rendezvous
  ThreadOobGroup group(kRanks);
  std::vector<size_t> sockets(3);
  auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
    // Before the transports: a rank that throws must close them before its buffers go.
    Exchange first, onBase, onEveryone, onPair, again;
    UcxTransportOptions options;
    options.networkOnly = true;
    auto base = makeUcx(oob, options);
    const UcxContextIds ids = ucxContextIds(*base);
    expect(ids.next == 1 && ids.max == ucx::maxContextFor(2),
           fmt::format("context ids: next {}, max {}", ids.next, ids.max));
    // Connections are made on first use, some twice over at first: count once all are up.
    postExchange(*base, rank, kRanks, bytes, 5, first);
    waitDone(*base, first.all, "context 0 alone", &group);
    checkExchange(first, rank, bytes, "context 0 alone");
    oob.barrier(testDeadline());
    if (rank == 0) sockets[0] = tcpEndsReceived().size();
    oob.barrier(testDeadline());

    const int pairRanks[] = {3, 1};
    const int reversed[] = {3, 2, 1, 0};
    const int all[] = {0, 1, 2, 3};
    std::unique_ptr<Transport> pair, everyone;
    const int inPair = rank == 3 ? 0 : rank == 1 ? 1 : -1;
    if (inPair >= 0) {
      const int other[] = {1 - inPair};
      pair = shareUcxTransport(*base, 1, pairRanks, inPair, other, "pair");
    }
    everyone = shareUcxTransport(*base, 2, reversed, kRanks - 1 - rank, all, "reversed");
    expect(ucxContextIds(*base).next == 3, "sharing as context 2 did not use up ids 1 and 2");
    auto& shared = dynamic_cast<ucx::UcxTransport&>(*everyone);
    expect(shared.channelsTo(kRanks - 1 - rank) == 1 && shared.nranks() == kRanks,
           "the reversed context does not see its ranks");

    // Receives in one order, sends in the other: a message matched by tag and sender alone
    // would land in another context's buffer.
    postReceives(*everyone, kRanks - 1 - rank, kRanks, bytes, 2, onEveryone);
    postReceives(*base, rank, kRanks, bytes, 0, onBase);
    if (pair) postReceives(*pair, inPair, 2, bytes, 1, onPair);
    oob.barrier(testDeadline());
    if (pair) postSends(*pair, inPair, 2, bytes, onPair);
    postSends(*base, rank, kRanks, bytes, onBase);
    postSends(*everyone, kRanks - 1 - rank, kRanks, bytes, onEveryone);
    waitDone(*base, joined({&onBase, &onEveryone, &onPair}), "three contexts at once", &group);
    checkExchange(onBase, rank, bytes, "context 0");
    checkExchange(onEveryone, kRanks - 1 - rank, bytes, "context 2 (reversed)");
    if (pair) checkExchange(onPair, inPair, bytes, "context 1 (ranks 3 and 1)");
    expect(!base->busy() && !everyone->busy() && !(pair && pair->busy()), "busy after all done");
    oob.barrier(testDeadline());
    if (rank == 0) sockets[1] = tcpEndsReceived().size();

    // The worker's own communicator goes first; the others keep the worker and its endpoints.
    barrierAndClose(*base, oob);
    base.reset();
    postExchange(*everyone, kRanks - 1 - rank, kRanks, bytes, 3, again);
    waitDone(*everyone, again.all, "context 2 after context 0 closed", &group);
    checkExchange(again, kRanks - 1 - rank, bytes, "context 2 after context 0 closed");
    oob.barrier(testDeadline());
    if (rank == 0) sockets[2] = tcpEndsReceived().size();
    if (pair) pair->close(testDeadline());
    barrierAndClose(*everyone, oob);
  });
  INFO(joinErrors(errors));
  REQUIRE(joinErrors(errors).empty());
  INFO("established tcp ends: " << sockets[0] << " before sharing, " << sockets[1] << " after, "
                                << sockets[2] << " once context 0 closed");
  CHECK(sockets[1] == sockets[0]);
  CHECK(sockets[2] == sockets[0]);
}

TEST_CASE("sharing refuses context 0, ids beyond the tag, and peers the worker does not reach") {
  ThreadOobGroup group(2);
  auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
    UcxTransportOptions options;
    options.networkOnly = true;
    options.peers = {1 - rank};  // no endpoint to itself
    auto base = makeUcx(oob, options);
    const int swapped[] = {1, 0};
    const int other[] = {rank};  // the other rank, numbered as `swapped` numbers it
    const int self[] = {1 - rank};
    auto refused = [&](uint32_t context, std::span<const int> peers, const std::string& says) {
      try {
        shareUcxTransport(*base, context, swapped, 1 - rank, peers, "bad");
        throw std::runtime_error(fmt::format("context {} was accepted", context));
      } catch (const Error& e) {
        expect(e.result() == weftInternalError &&
                   std::string(e.what()).find(says) != std::string::npos,
               e.what());
      }
    };
    refused(0, other, "context 0 (1..524287 with 2 ranks on it)");
    refused(ucx::maxContextFor(1) + 1, other, "context 524288");
    refused(1, self, "not reached by the UCX worker");
    // Refusals hand out nothing; a context that works names ranks as it numbers them.
    expect(ucxContextIds(*base).next == 1, "a refused context used up an id");
    auto shared = shareUcxTransport(*base, 9, swapped, 1 - rank, other, "swapped");
    expect(ucxContextIds(*base).next == 10, "context 9 did not move the next id to 10");
    Request toSelf;
    char byte = 1;
    shared->postSend(1 - rank, 1, &byte, 1, &toSelf);
    expect(toSelf.state.load() == Request::kFailed &&
               toSelf.error.find(fmt::format("rank {}: send to rank {} (tag 0x1, 1 bytes) failed: "
                                             "rank {} is not among the ranks",
                                             1 - rank, 1 - rank, 1 - rank)) == 0,
           toSelf.error);
    shared->close(testDeadline());
    barrierAndClose(*base, oob);
  });
  INFO(joinErrors(errors));
  CHECK(joinErrors(errors).empty());
}

// A peer lost to one context is lost to all on the worker, and each names it as it numbers
// it: context 1 numbers the worker's ranks 2, 1, 0 as 0, 1, 2.
TEST_CASE("shared worker: a vanished peer fails every context, each naming it in its numbering") {
  constexpr int kRanks = 3;
  ThreadOobGroup group(kRanks);
  std::vector<std::string> baseErrors(kRanks), sharedErrors(kRanks), lost(kRanks);
  auto errors = runRanks(group, [&](int rank, OutOfBand& oob) {
    Exchange first;
    std::vector<uint8_t> in(100);
    Request fromBase, fromShared;
    UcxTransportOptions options;
    options.networkOnly = true;  // tcp with UCX peer error handling, as between hosts
    auto base = makeUcx(oob, options);
    const int reversed[] = {2, 1, 0}, all[] = {0, 1, 2};
    auto shared = shareUcxTransport(*base, 1, reversed, kRanks - 1 - rank, all, "reversed");
    postExchange(*base, rank, kRanks, 64, 0, first);  // every connection up
    waitDone(*base, first.all, "context 0 before the loss", &group);
    if (rank == 2) {
      oob.barrier(testDeadline());
      shared.reset();  // gone without close(), as if the rank had crashed
      base.reset();
      return;
    }
    base->postRecv(2, 5, in.data(), in.size(), &fromBase);
    shared->postRecv(0, 5, in.data(), in.size(), &fromShared);  // worker rank 2 again
    // Rank 2 vanishes now, while this rank progresses.
    oob.barrier(testDeadline());
    waitFinished(*base, {&fromBase, &fromShared}, "receives from a vanished peer", &group);
    expect(fromBase.state.load() == Request::kFailed && fromShared.state.load() == Request::kFailed,
           "a receive from the vanished peer did not fail");
    baseErrors[rank] = fromBase.error;
    sharedErrors[rank] = fromShared.error;
    lost[rank] = shared->lostPeer();
    shared->close(testDeadline());
    base->close(testDeadline());
  });
  INFO(joinErrors(errors));
  REQUIRE(joinErrors(errors).empty());
  for (int rank = 0; rank < 2; ++rank) {
    INFO("rank " << rank << ": " << baseErrors[rank] << " | " << sharedErrors[rank] << " | "
                 << lost[rank]);
    CHECK(baseErrors[rank].rfind(fmt::format("rank {}: recv from rank 2 ", rank), 0) == 0);
    CHECK(baseErrors[rank].find("connection to rank 2 lost") != std::string::npos);
    CHECK(sharedErrors[rank].rfind(fmt::format("rank {}: recv from rank 0 ", 2 - rank), 0) == 0);
    CHECK(sharedErrors[rank].find("connection to rank 0 lost") != std::string::npos);
    CHECK(lost[rank].rfind("connection to rank 0 lost", 0) == 0);
  }
}
