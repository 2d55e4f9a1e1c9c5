// The bootstrap root: a background thread that introduces the ranks of a communicator to each
// other. It serves rounds: ranks connect, authenticate (handshake.hpp) and say Hello (their
// rank, nranks, listen address, host identity, pid); when all nranks ranks of a round are in, it
// sends each of them the table of all ranks and a fresh random communicator id, and starts the
// next round. weftGetUniqueId hosts a root for one round; weftrun hosts one for every
// communicator of its job (rounds = 0).
//
// Bad input never stops the root: strangers and broken connections are dropped and logged;
// inconsistent hellos (different nranks, a rank twice, a rank out of range) fail the round with
// a message, sent to every rank of the round, that weftInvalidUsage carries; a rank that waits
// too long is told which ranks never came.
#pragma once

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "lib/base/deadline.hpp"
#include "lib/bootstrap/handshake.hpp"
#include "lib/bootstrap/root_protocol.hpp"
#include "lib/bootstrap/socket.hpp"
#include "lib/bootstrap/unique_id.hpp"

namespace weft {

struct RootOptions {
  int rounds = 1;                         // rounds to serve; 0: until stopped
  Deadline lifetime = Deadline::never();  // stop then, even with rounds left
  SocketAddress listenAddress;            // empty: per WEFT_SOCKET_IFNAME, ephemeral port
  int64_t handshakeTimeoutMs =
      kHandshakeTimeoutMs;  // per connection, to authenticate and say hello
};

// A rank that has said hello in the round now forming.
struct JoinedRank {
  int rank = -1;
  int nranks = 0;
  RankInfo info;
};

struct RootState;

class Root {
 public:
  ~Root();  // stop() and join, unless detached
  Root(const Root&) = delete;
  Root& operator=(const Root&) = delete;

  // Where the root listens and the fresh secret: what ranks need to join.
  const UniqueId& id() const;

  // Asks the thread to stop (ranks still waiting are told) and returns without waiting.
  void stop();
  // False once the thread has finished (rounds served, lifetime over, or stopped).
  bool running() const;
  int roundsServed() const;

  // The ranks that have joined the round now forming, in arrival order (diagnostics, tests).
  std::vector<JoinedRank> joined() const;
  // Waits until at least `count` ranks have joined the round now forming; false at the deadline
  // or when the root has finished.
  bool waitForJoined(int count, Deadline deadline) const;
  // Waits until the thread has finished; false at the deadline.
  bool waitFinished(Deadline deadline) const;

  // Lets the thread run on its own until its rounds or lifetime end; this object may then be
  // destroyed (weftGetUniqueId returns while the root serves its one round).
  void detach();

 private:
  friend std::unique_ptr<Root> startRoot(const RootOptions& options);
  Root() = default;
  std::shared_ptr<RootState> state_;
  std::thread thread_;
};

// Listens (errors are thrown here, not in the thread), picks a fresh secret and starts serving.
std::unique_ptr<Root> startRoot(const RootOptions& options = {});

}  // namespace weft
