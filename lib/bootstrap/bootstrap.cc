#include "lib/bootstrap/bootstrap.hpp"

#include <unistd.h>

#include <exception>
#include <thread>

#include "lib/base/log.hpp"
#include "lib/bootstrap/frame.hpp"
#include "lib/bootstrap/host_id.hpp"
#include "lib/bootstrap/interface.hpp"

namespace weft {
namespace {

// Runs `body`; an Error it throws is rethrown with `context` in front of its message.
template <class F>
auto withContext(const std::string& context, F&& body) {
  try {
    return body();
  } catch (const Error& e) {
    throw Error(e.result(), fmt::format("{}: {}", context, e.what()));
  }
}

}  // namespace

Bootstrap::Bootstrap(int rank, const UniqueId& id, const std::atomic<bool>* abortFlag)
    : rank_(rank), id_(id), abortFlag_(abortFlag) {}

Bootstrap::~Bootstrap() = default;

std::unique_ptr<Bootstrap> Bootstrap::connect(const UniqueId& id, int rank, int nranks,
                                              Deadline deadline,
                                              const std::atomic<bool>* abortFlag) {
  if (nranks < 1 || nranks > kMaxRanks)
    fail(weftInvalidArgument, "nranks={} is out of range [1, {}]", nranks, kMaxRanks);
  if (rank < 0 || rank >= nranks)
    fail(weftInvalidArgument, "rank={} is out of range [0, {}) for nranks={}", rank, nranks,
         nranks);
  ensureSodium();
  std::unique_ptr<Bootstrap> self(new Bootstrap(rank, id, abortFlag));
  const std::string me = fmt::format("rank {}", rank);
  const std::string rootName = fmt::format("the bootstrap root at {}", id.root.toString());

  // The ring listener exists before the hello announces it, so peers never find it missing.
  Hello hello;
  hello.rank = rank;
  hello.nranks = nranks;
  hello.info.hostId = hostIdentity().substr(0, kMaxHostIdBytes);
  hello.info.pid = ::getpid();
  Fd listener;
  if (nranks > 1) {
    listener = listenOn(bootstrapListenAddress());
    hello.info.address = localAddress(listener.get());
  } else {
    hello.info.address = bootstrapListenAddress();  // nobody connects; informative only
  }

  RankTable table = withContext(me, [&] {
    Socket root = connectTo(id.root, deadline, abortFlag);
    root.setPeerName(rootName);
    authenticateToAcceptor(root, id.secret, encodeClaim(Claim{}), deadline, abortFlag);
    hello.waitMs = static_cast<uint32_t>(deadline.remainingMs());
    sendFrame(root, FrameType::kHello, encodeHello(hello), deadline, abortFlag, "saying hello");
    Frame frame;
    try {
      frame = receiveFrameOfType(root, FrameType::kTable, deadline, abortFlag,
                                 fmt::format("waiting for all {} ranks to join", nranks));
    } catch (const Error& e) {
      if (e.result() != weftTimeout) throw;
      if (std::string_view(e.what()).starts_with("bootstrap:")) throw;  // the root's report
      fail(weftTimeout, "{} ({} sent no report of which ranks are missing)", e.what(), rootName);
    }
    return decodeTable(frame.payload, rootName);
  });
  if (static_cast<int>(table.ranks.size()) != nranks)
    fail(weftRemoteError, "{}: {} sent a table of {} ranks, expected {}", me, rootName,
         table.ranks.size(), nranks);
  const RankInfo& mine = table.ranks[static_cast<size_t>(rank)];
  if (nranks > 1 && !(mine.address == hello.info.address))
    fail(weftRemoteError, "{}: {} lists {} as this rank's address, expected {}", me, rootName,
         mine.address.toString(), hello.info.address.toString());
  self->commId_ = table.commId;
  self->ranks_ = std::move(table.ranks);
  if (nranks > 1) self->formRing(std::move(listener), deadline);
  WEFT_INFO(kSubsysBoot, "bootstrap: rank {} of {} joined communicator {}", rank, nranks,
            toHex(self->commId_));
  return self;
}

void Bootstrap::formRing(Fd listener, Deadline deadline) {
  const int n = nranks();
  const int next = (rank_ + 1) % n;
  const int prev = (rank_ + n - 1) % n;
  const RankInfo& nextInfo = ranks_[static_cast<size_t>(next)];
  const RankInfo& prevInfo = ranks_[static_cast<size_t>(prev)];

  // Accept rank r-1 on a helper thread while connecting to rank r+1: every rank does both at
  // once, so neither can wait for the other.
  std::atomic<bool> stop{false};
  std::exception_ptr acceptError;
  const std::string acceptWhat =
      fmt::format("rank {}: waiting for rank {} (pid {}, {}) to connect to the ring", rank_, prev,
                  prevInfo.pid, prevInfo.address.host());
  std::thread acceptor([&] {
    try {
      const ClaimCheck check = [&](std::span<const uint8_t> bytes) -> std::string {
        const auto claim = decodeClaim(bytes);
        if (!claim || claim->kind != Claim::kRingLink)
          return "authenticated, but does not claim to be a rank joining the ring";
        if (claim->commId != commId_)
          return fmt::format("claims to be rank {} of communicator {}, not of {}", claim->rank,
                             toHex(claim->commId), toHex(commId_));
        if (claim->rank != prev)
          return fmt::format("claims to be rank {}, but only rank {} connects here", claim->rank,
                             prev);
        return "";
      };
      prev_ = acceptAuthenticated(listener.get(), id_.secret, check, deadline, abortFlag_, &stop,
                                  acceptWhat);
      prev_.setPeerName(fmt::format("rank {} at {}", prev, prev_.peerAddress().toString()));
    } catch (...) {
      acceptError = std::current_exception();
    }
  });
  try {
    withContext(
        fmt::format("rank {}: connecting the ring to rank {} (pid {})", rank_, next, nextInfo.pid),
        [&] {
          next_ = connectTo(nextInfo.address, deadline, abortFlag_);
          next_.setPeerName(fmt::format("rank {} at {}", next, nextInfo.address.toString()));
          Claim claim{Claim::kRingLink, rank_, commId_};
          authenticateToAcceptor(next_, id_.secret, encodeClaim(claim), deadline, abortFlag_);
        });
  } catch (...) {
    stop.store(true, std::memory_order_release);
    acceptor.join();
    throw;
  }
  acceptor.join();
  if (acceptError) std::rethrow_exception(acceptError);
  // The listener closes here: from now on strangers are refused by the kernel.
}

std::vector<std::vector<uint8_t>> Bootstrap::allGather(std::span<const uint8_t> mine,
                                                       Deadline deadline) {
  const int n = nranks();
  if (mine.size() > kMaxBlobBytes)
    fail(weftInvalidArgument, "rank {}: bootstrap allGather of {} bytes (at most {})", rank_,
         mine.size(), kMaxBlobBytes);
  if (!broken_.empty())
    fail(weftRemoteError, "rank {}: the bootstrap ring is broken by an earlier error: {}", rank_,
         broken_);
  std::vector<std::vector<uint8_t>> result(static_cast<size_t>(n));
  result[static_cast<size_t>(rank_)].assign(mine.begin(), mine.end());
  const uint64_t operation = ++operations_;
  const int next = (rank_ + 1) % n;
  const int prev = (rank_ + n - 1) % n;
  // Step s forwards the block of rank (r - s) and receives the block of rank (r - s - 1).
  for (int step = 0; step + 1 < n; ++step) {
    const int sendRank = (rank_ - step + n) % n;
    const int recvRank = (rank_ - step - 1 + 2 * n) % n;
    const std::string what = fmt::format(
        "rank {}: bootstrap allGather #{}, step {} of {} (sending to rank {}, "
        "receiving from rank {})",
        rank_, operation, step + 1, n - 1, next, prev);
    try {
      // origin rank u32 | operation u64 | block
      const std::vector<uint8_t>& block = result[static_cast<size_t>(sendRank)];
      WireWriter w;
      w.u32(static_cast<uint32_t>(sendRank));
      w.u64(operation);
      w.bytes(block);
      const std::vector<uint8_t> encoded = encodeFrame(FrameType::kRingData, w.data());
      Frame frame = exchangeFrames(next_, encoded, prev_, deadline, abortFlag_, what);
      if (frame.type != FrameType::kRingData)
        fail(weftRemoteError, "{} sent a {} message", prev_.peer(), frameTypeName(frame.type));
      WireReader r(frame.payload, fmt::format("allGather block from {}", prev_.peer()));
      const uint32_t origin = r.u32();
      const uint64_t theirOperation = r.u64();
      if (origin != static_cast<uint32_t>(recvRank) || theirOperation != operation)
        fail(weftRemoteError,
             "{} sent the block of rank {} of operation #{}, expected rank {} of #{} (did every "
             "rank make the same bootstrap calls?)",
             prev_.peer(), origin, theirOperation, recvRank, operation);
      result[static_cast<size_t>(recvRank)].assign(r.rest().begin(), r.rest().end());
    } catch (const Error& e) {
      const std::string message = std::string_view(e.what()).starts_with(what)
                                      ? std::string(e.what())
                                      : fmt::format("{}: {}", what, e.what());
      broken_ = message;
      throw Error(e.result(), message);
    }
  }
  return result;
}

void Bootstrap::barrier(Deadline deadline) {
  // In a ring allGather a rank finishes only after it has every rank's block, which each rank
  // sends only once it has entered: an empty allGather is a barrier.
  allGather({}, deadline);
}

}  // namespace weft
