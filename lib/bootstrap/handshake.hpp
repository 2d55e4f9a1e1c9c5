// Mutual challenge-response authentication of a bootstrap connection. Both ends know the job's
// secret (from the unique id); neither sends it.
//
//   acceptor  -> connector   Challenge  nonceA (32 random bytes)
//   connector -> acceptor    Response   nonceB (32) | MAC(secret, "connector" label, nonceA,
//                                       nonceB, claim) (32) | claim (at most 64 bytes)
//   acceptor  -> connector   Confirm    MAC(secret, "acceptor" label, nonceA, nonceB, claim)
//
// MAC is HMAC-SHA512-256 keyed by the secret. The claim says who the connector is (a rank saying
// hello to the root, or rank r joining the ring of communicator c) and is covered by both MACs,
// so a peer cannot claim to be someone else without the secret. An acceptor confirms only after
// checking the claim. A connection that fails any step is closed and logged at WARN with the
// remote address, never trusted.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/deadline.hpp"
#include "lib/bootstrap/frame.hpp"
#include "lib/bootstrap/socket.hpp"
#include "lib/bootstrap/unique_id.hpp"

namespace weft {

inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kMacBytes = 32;
inline constexpr size_t kMaxClaimBytes = 64;
// How long one connection may take to authenticate before an acceptor drops it. Others are
// served meanwhile, so this bounds only what a silent stranger costs (one descriptor).
inline constexpr int64_t kHandshakeTimeoutMs = 5000;

using CommId = std::array<uint8_t, 16>;

// Initialises libsodium once per process (thread-safe); throws weftSystemError if it cannot.
void ensureSodium();
// Cryptographically random bytes (secrets, communicator ids, nonces).
void randomBytes(std::span<uint8_t> out);

// Who a connector says it is.
struct Claim {
  enum Kind : uint8_t { kRootHello = 1, kRingLink = 2 };
  Kind kind = kRootHello;
  int rank = -1;    // kRingLink: the connecting rank
  CommId commId{};  // kRingLink: the communicator it joins
};
std::vector<uint8_t> encodeClaim(const Claim& claim);
// nullopt when the bytes are not a claim.
std::optional<Claim> decodeClaim(std::span<const uint8_t> bytes);

// Connector side, blocking until done or the deadline/abort. Throws weftRemoteError when the
// acceptor does not prove it knows the secret (or closes the connection, which is what an
// acceptor does with a wrong secret or a rejected claim).
void authenticateToAcceptor(Socket& socket, const Secret& secret, std::span<const uint8_t> claim,
                            Deadline deadline, const std::atomic<bool>* abortFlag);

// Acceptor side of one connection, driven by the caller's poll loop, so that one thread can
// authenticate many connections at once and a silent or slow one delays nobody.
class AcceptorHandshake {
 public:
  explicit AcceptorHandshake(const Secret& secret);
  // Sends the challenge (a few bytes: never blocks on a fresh connection).
  void start(Socket& socket);
  // Call when the socket is readable. Returns true once the connector's MAC is verified; throws
  // Error when the connection must be dropped.
  bool onReadable(Socket& socket);
  std::span<const uint8_t> claim() const { return claim_; }
  // Proves our knowledge of the secret to the connector; call once the claim is accepted.
  void confirm(Socket& socket);

 private:
  Secret secret_;
  std::array<uint8_t, kNonceBytes> nonceA_{};
  std::array<uint8_t, kNonceBytes> nonceB_{};
  std::vector<uint8_t> claim_;
  FrameReader reader_;
  bool verified_ = false;
};

// Returns an empty string when the claim is acceptable, else why not (for the WARN line).
using ClaimCheck = std::function<std::string(std::span<const uint8_t> claim)>;

// Accepts connections on a listening socket until one authenticates with a claim `check`
// accepts, and returns it. Strangers are dropped with a WARN line. Throws weftTimeout at the
// deadline and kAbortedResult when either flag is set; `what` prefixes those messages.
Socket acceptAuthenticated(int listenFd, const Secret& secret, const ClaimCheck& check,
                           Deadline deadline, const std::atomic<bool>* abortFlag,
                           const std::atomic<bool>* stopFlag, std::string_view what);

}  // namespace weft
