#include "lib/bootstrap/root_loop.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include "lib/base/log.hpp"
#include "lib/bootstrap/frame.hpp"

namespace weft {
namespace {

constexpr size_t kMaxPendingConnections = 1024;
constexpr int64_t kReplyTimeoutMs = 1000;   // an error message to a rank
constexpr int64_t kTableTimeoutMs = 30000;  // the table to a rank

Deadline later(Deadline a, Deadline b) {
  return a.at() < b.at() ? b : a;
}

// When to tell a rank that waits `waitMs` which ranks are missing: a little before it gives up,
// early enough that a busy machine still delivers the report in time.
Deadline reportTime(uint32_t waitMs) {
  const int64_t margin = std::clamp<int64_t>(waitMs / 5, 50, 1000);
  return Deadline::afterMs(std::max<int64_t>(0, int64_t{waitMs} - margin));
}

struct Connection {
  enum class Stage { kHandshake, kHello, kJoined };
  Stage stage = Stage::kHandshake;
  Socket socket;
  std::unique_ptr<AcceptorHandshake> handshake;
  FrameReader reader;
  Deadline until = Deadline::never();  // kJoined: when to report missing ranks; else: drop
  Hello hello;
  bool closed = false;
};

class RootLoop {
 public:
  explicit RootLoop(RootState& s) : s_(s) {}
  void run();

 private:
  void acceptNew();
  void onReadable(Connection& c);
  void onExpired(Connection& c);
  void onHello(Connection& c);
  void failRound(const std::string& problem, Connection& newcomer);
  void completeRound();
  void endRound();
  void leaveRound(Connection& c);
  void reply(Connection& c, weftResult_t result, const std::string& message);
  void drop(Connection& c, std::string_view why);
  void publish();

  RootState& s_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<Connection*> round_;  // joined, in arrival order
  // Ranks of the forming round that joined and then gave up (timed out or left): reports say so
  // rather than calling them missing. Forgotten when the round empties.
  std::set<int> gaveUp_;
  // A failed round: every rank that joins it is sent this, until as many have come as the
  // largest nranks any of them said (or they would all have given up).
  std::optional<std::string> failure_;
  int failedArrivals_ = 0;
  int failedExpected_ = 0;
  Deadline failedUntil_ = Deadline::never();
};

void RootLoop::run() {
  std::string reason = "it was stopped";
  const int rounds = s_.options.rounds;
  std::vector<pollfd> fds;
  while (!s_.stopRequested.load(std::memory_order_acquire)) {
    if (s_.options.lifetime.expired()) {
      reason = "its lifetime ended";
      break;
    }
    {
      std::lock_guard lock(s_.mutex);
      if (rounds > 0 && s_.roundsServed >= rounds) {
        reason = "it has served its rounds";
        break;
      }
    }
    fds.clear();
    fds.push_back(pollfd{s_.listener.get(), POLLIN, 0});
    fds.push_back(pollfd{s_.wake.get(), POLLIN, 0});
    Deadline wake = Deadline::afterMs(1000).earlier(s_.options.lifetime);
    if (failure_) wake = wake.earlier(failedUntil_);
    for (const auto& c : connections_) {
      fds.push_back(pollfd{c->socket.fd(), POLLIN, 0});
      wake = wake.earlier(c->until);
    }
    if (::poll(fds.data(), fds.size(), wake.remainingMs()) < 0 && errno != EINTR)
      failErrno(errno, "bootstrap root: poll");
    if (fds[1].revents != 0) {
      uint64_t count;
      (void)!::read(s_.wake.get(), &count, sizeof count);
    }
    const size_t polled = connections_.size();
    for (size_t i = 0; i < polled; ++i) {
      Connection& c = *connections_[i];
      if (c.closed) continue;  // a round that completed or failed in this pass closed it
      try {
        if (fds[i + 2].revents != 0)
          onReadable(c);
        else if (c.until.expired())
          onExpired(c);
      } catch (const std::exception& e) {
        drop(c, e.what());
      }
    }
    if (failure_ && failedUntil_.expired()) endRound();
    if (fds[0].revents != 0) acceptNew();
    std::erase_if(connections_, [](const auto& c) { return c->closed; });
  }
  // Ranks still waiting learn why they will get no table.
  for (Connection* c : round_)
    reply(*c, weftRemoteError,
          fmt::format("bootstrap: the root at {} stopped before all ranks joined: {}",
                      s_.id.root.toString(), reason));
  round_.clear();
  for (const auto& c : connections_)
    if (!c->closed && c->stage != Connection::Stage::kJoined)
      WEFT_WARN(kSubsysBoot, "bootstrap root at {}: closing unauthenticated connection from {}",
                s_.id.root.toString(), c->socket.peer());
  connections_.clear();
  WEFT_INFO(kSubsysBoot, "bootstrap root at {}: finished ({})", s_.id.root.toString(), reason);
}

void RootLoop::acceptNew() {
  for (;;) {
    Socket socket = acceptPending(s_.listener.get());
    if (!socket.valid()) return;
    size_t pending = 0;
    for (const auto& c : connections_)
      if (!c->closed && c->stage != Connection::Stage::kJoined) ++pending;
    if (pending >= kMaxPendingConnections) {
      for (const auto& c : connections_)  // the oldest unauthenticated one makes room
        if (!c->closed && c->stage != Connection::Stage::kJoined) {
          drop(*c, "too many connections are authenticating at once");
          break;
        }
    }
    auto c = std::make_unique<Connection>();
    c->socket = std::move(socket);
    c->handshake = std::make_unique<AcceptorHandshake>(s_.id.secret);
    c->until = Deadline::afterMs(s_.options.handshakeTimeoutMs);
    try {
      c->handshake->start(c->socket);
    } catch (const std::exception& e) {
      drop(*c, e.what());
      continue;
    }
    WEFT_TRACE(kSubsysBoot, "bootstrap root: connection from {}", c->socket.peer());
    connections_.push_back(std::move(c));
  }
}

void RootLoop::onReadable(Connection& c) {
  switch (c.stage) {
    case Connection::Stage::kHandshake: {
      if (!c.handshake->onReadable(c.socket)) return;
      const auto claim = decodeClaim(c.handshake->claim());
      if (!claim || claim->kind != Claim::kRootHello) {
        drop(c, "authenticated, but does not claim to be a rank saying hello to the root");
        return;
      }
      c.handshake->confirm(c.socket);
      c.handshake.reset();
      c.stage = Connection::Stage::kHello;
      return;
    }
    case Connection::Stage::kHello: {
      if (!c.reader.readSome(c.socket)) return;
      const Frame frame = c.reader.take();
      if (frame.type != FrameType::kHello)
        fail(weftRemoteError, "sent a {} message instead of a hello", frameTypeName(frame.type));
      c.hello = decodeHello(frame.payload, c.socket.peer());
      c.socket.setPeerName(
          fmt::format("rank {} at {}", c.hello.rank, c.socket.peerAddress().toString()));
      onHello(c);
      return;
    }
    case Connection::Stage::kJoined: {
      // A joined rank sends nothing more; readable means it left (closed or aborted).
      std::array<uint8_t, 1> byte;
      long n = c.socket.receiveSome(byte);
      if (n == Socket::kWouldBlock) return;
      WEFT_INFO(kSubsysBoot, "bootstrap root: {} left before the round completed", c.socket.peer());
      leaveRound(c);
      c.closed = true;
      c.socket.close();
      return;
    }
  }
}

void RootLoop::onExpired(Connection& c) {
  if (c.stage != Connection::Stage::kJoined) {
    drop(c, fmt::format("did not authenticate and say hello within {} ms",
                        s_.options.handshakeTimeoutMs));
    return;
  }
  const int nranks = c.hello.nranks;
  std::vector<bool> present(static_cast<size_t>(nranks), false);
  for (const Connection* j : round_) present[static_cast<size_t>(j->hello.rank)] = true;
  std::vector<int> missing;
  std::vector<int> gone;
  for (int r = 0; r < nranks; ++r) {
    if (present[static_cast<size_t>(r)]) continue;
    (gaveUp_.count(r) ? gone : missing).push_back(r);
  }
  const int joined = static_cast<int>(round_.size());
  std::string message;
  if (!missing.empty())
    message = fmt::format(
        "bootstrap: timed out waiting for {} to join ({} of {} ranks are in at the root at {}{})",
        formatRanks(missing), joined, nranks, s_.id.root.toString(),
        gone.empty() ? "" : fmt::format("; {} joined but gave up waiting", formatRanks(gone)));
  else
    message = fmt::format(
        "bootstrap: timed out waiting for {}, which joined but gave up waiting, to join again ({} "
        "of {} ranks are in at the root at {})",
        formatRanks(gone), joined, nranks, s_.id.root.toString());
  WEFT_INFO(kSubsysBoot, "bootstrap root: telling {}: {}", c.socket.peer(), message);
  leaveRound(c);
  reply(c, weftTimeout, message);
}

void RootLoop::onHello(Connection& c) {
  const Hello& h = c.hello;
  if (h.nranks < 1 || h.nranks > kMaxRanks) {
    reply(c, weftInvalidUsage,
          fmt::format("bootstrap: rank {} joined with nranks={}; nranks must be in [1, {}]", h.rank,
                      h.nranks, kMaxRanks));
    return;
  }
  if (failure_) {
    ++failedArrivals_;
    failedExpected_ = std::max(failedExpected_, h.nranks);
    reply(c, weftInvalidUsage, *failure_);
    if (failedArrivals_ >= failedExpected_) endRound();
    return;
  }
  std::string problem;
  if (!round_.empty() && h.nranks != round_.front()->hello.nranks) {
    const Hello& first = round_.front()->hello;
    problem = fmt::format("rank {} joined with nranks={} but rank {} joined with nranks={}", h.rank,
                          h.nranks, first.rank, first.nranks);
  } else if (h.rank < 0 || h.rank >= h.nranks) {
    problem = fmt::format("rank {} joined with nranks={}; ranks must be in [0, {})", h.rank,
                          h.nranks, h.nranks);
  } else {
    for (const Connection* j : round_)
      if (j->hello.rank == h.rank)
        problem = fmt::format(
            "rank {} joined twice with nranks={}: pid {} listening at {} and pid {} listening at "
            "{}",
            h.rank, h.nranks, j->hello.info.pid, j->hello.info.address.toString(), h.info.pid,
            h.info.address.toString());
  }
  if (!problem.empty()) {
    failRound(problem, c);
    return;
  }
  c.stage = Connection::Stage::kJoined;
  c.until = reportTime(h.waitMs);
  round_.push_back(&c);
  WEFT_TRACE(kSubsysBoot, "bootstrap root: rank {} of {} joined ({} in)", h.rank, h.nranks,
             round_.size());
  if (static_cast<int>(round_.size()) == h.nranks)
    completeRound();
  else
    publish();
}

void RootLoop::failRound(const std::string& problem, Connection& newcomer) {
  WEFT_WARN(kSubsysBoot, "bootstrap root at {}: round failed: {}", s_.id.root.toString(), problem);
  failure_ = "bootstrap: " + problem;
  failedArrivals_ = static_cast<int>(round_.size()) + 1;
  failedExpected_ = std::max(1, std::min(newcomer.hello.nranks, kMaxRanks));
  failedUntil_ = reportTime(newcomer.hello.waitMs);
  std::vector<Connection*> told = round_;
  told.push_back(&newcomer);
  round_.clear();
  for (Connection* c : told) {
    failedExpected_ = std::max(failedExpected_, std::min(c->hello.nranks, kMaxRanks));
    failedUntil_ = later(failedUntil_, c->until);
    reply(*c, weftInvalidUsage, *failure_);
  }
  if (failedArrivals_ >= failedExpected_) endRound();
  publish();
}

void RootLoop::completeRound() {
  RankTable table;
  randomBytes(table.commId);
  table.ranks.resize(round_.size());
  for (const Connection* c : round_)
    table.ranks[static_cast<size_t>(c->hello.rank)] = c->hello.info;
  const std::vector<uint8_t> encoded = encodeFrame(FrameType::kTable, encodeTable(table));
  // The round counts as served before any rank can see its table.
  const std::vector<Connection*> members = std::move(round_);
  round_.clear();
  endRound();
  for (Connection* c : members) {
    try {
      c->socket.sendAll(encoded, Deadline::afterMs(kTableTimeoutMs).earlier(s_.options.lifetime),
                        &s_.stopRequested, "sending the rank table");
    } catch (const std::exception& e) {
      WEFT_WARN(kSubsysBoot, "bootstrap root: {}: {}", c->socket.peer(), e.what());
    }
    c->closed = true;
    c->socket.close();
  }
  WEFT_INFO(kSubsysBoot, "bootstrap root at {}: communicator {} formed with {} ranks",
            s_.id.root.toString(), toHex(table.commId), members.size());
}

void RootLoop::endRound() {
  gaveUp_.clear();
  failure_.reset();
  failedArrivals_ = failedExpected_ = 0;
  failedUntil_ = Deadline::never();
  {
    std::lock_guard lock(s_.mutex);
    ++s_.roundsServed;
  }
  publish();
}

void RootLoop::leaveRound(Connection& c) {
  if (std::erase(round_, &c) > 0) gaveUp_.insert(c.hello.rank);
  if (round_.empty()) gaveUp_.clear();
  publish();
}

void RootLoop::reply(Connection& c, weftResult_t result, const std::string& message) {
  try {
    sendFrame(c.socket, FrameType::kError, encodeErrorMessage(result, message),
              Deadline::afterMs(kReplyTimeoutMs), &s_.stopRequested, "replying");
  } catch (const std::exception& e) {
    WEFT_INFO(kSubsysBoot, "bootstrap root: could not tell {} '{}': {}", c.socket.peer(), message,
              e.what());
  }
  c.closed = true;
  c.socket.close();
}

void RootLoop::drop(Connection& c, std::string_view why) {
  WEFT_WARN(kSubsysBoot, "bootstrap root at {}: dropped connection from {}: {}",
            s_.id.root.toString(), c.socket.peer(), why);
  if (c.stage == Connection::Stage::kJoined) leaveRound(c);
  c.closed = true;
  c.socket.close();
}

void RootLoop::publish() {
  std::vector<JoinedRank> joined;
  for (const Connection* c : round_)
    joined.push_back(JoinedRank{c->hello.rank, c->hello.nranks, c->hello.info});
  std::lock_guard lock(s_.mutex);
  s_.joined = std::move(joined);
  s_.changed.notify_all();
}

}  // namespace

void serveRoot(const std::shared_ptr<RootState>& state) {
  try {
    RootLoop(*state).run();
  } catch (const std::exception& e) {
    WEFT_WARN(kSubsysBoot, "bootstrap root at {} failed: {}", state->id.root.toString(), e.what());
  } catch (...) {
    WEFT_WARN(kSubsysBoot, "bootstrap root at {} failed", state->id.root.toString());
  }
  state->listener.reset();
  std::lock_guard lock(state->mutex);
  state->running = false;
  state->joined.clear();
  state->changed.notify_all();
}

}  // namespace weft
