#include "lib/bootstrap/handshake.hpp"

#include <sodium.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "lib/base/log.hpp"

namespace weft {
namespace {

constexpr std::string_view kConnectorLabel = "weft bootstrap v1: connector proof";
constexpr std::string_view kAcceptorLabel = "weft bootstrap v1: acceptor proof";

using Mac = std::array<uint8_t, kMacBytes>;
static_assert(crypto_auth_hmacsha512256_BYTES == kMacBytes);

Mac proof(std::string_view label, const Secret& secret, std::span<const uint8_t> nonceA,
          std::span<const uint8_t> nonceB, std::span<const uint8_t> claim) {
  crypto_auth_hmacsha512256_state state;
  crypto_auth_hmacsha512256_init(&state, secret.data(), secret.size());
  crypto_auth_hmacsha512256_update(&state, reinterpret_cast<const uint8_t*>(label.data()),
                                   label.size());
  crypto_auth_hmacsha512256_update(&state, nonceA.data(), nonceA.size());
  crypto_auth_hmacsha512256_update(&state, nonceB.data(), nonceB.size());
  const uint8_t claimLength = static_cast<uint8_t>(claim.size());
  crypto_auth_hmacsha512256_update(&state, &claimLength, 1);
  crypto_auth_hmacsha512256_update(&state, claim.data(), claim.size());
  Mac mac;
  crypto_auth_hmacsha512256_final(&state, mac.data());
  sodium_memzero(&state, sizeof state);
  return mac;
}

// Frames sent by an acceptor are a few dozen bytes: a fresh connection always has room for
// them, and an acceptor must not wait on a peer that does not read.
void sendSmallFrame(Socket& socket, FrameType type, std::span<const uint8_t> payload) {
  const std::vector<uint8_t> encoded = encodeFrame(type, payload);
  if (socket.sendSome(encoded) != static_cast<long>(encoded.size()))
    fail(weftRemoteError, "{} does not read its socket", socket.peer());
}

}  // namespace

void ensureSodium() {
  static const int rc = sodium_init();  // thread-safe static; sodium_init may run again safely
  if (rc < 0) fail(weftSystemError, "libsodium failed to initialise (sodium_init)");
}

void randomBytes(std::span<uint8_t> out) {
  ensureSodium();
  randombytes_buf(out.data(), out.size());
}

// kind u8 | rank u32 | communicator id 16 bytes
std::vector<uint8_t> encodeClaim(const Claim& claim) {
  WireWriter w;
  w.u8(claim.kind);
  w.u32(static_cast<uint32_t>(claim.rank));
  w.bytes(claim.commId);
  return std::move(w.data());
}

std::optional<Claim> decodeClaim(std::span<const uint8_t> bytes) {
  if (bytes.size() != 1 + 4 + sizeof(CommId)) return std::nullopt;
  WireReader r(bytes, "claim");
  Claim claim;
  const uint8_t kind = r.u8();
  if (kind != Claim::kRootHello && kind != Claim::kRingLink) return std::nullopt;
  claim.kind = static_cast<Claim::Kind>(kind);
  claim.rank = static_cast<int32_t>(r.u32());
  r.bytes(claim.commId);
  return claim;
}

void authenticateToAcceptor(Socket& socket, const Secret& secret, std::span<const uint8_t> claim,
                            Deadline deadline, const std::atomic<bool>* abortFlag) {
  if (claim.size() > kMaxClaimBytes)
    fail(weftInternalError, "handshake claim of {} bytes (at most {})", claim.size(),
         kMaxClaimBytes);
  const std::string what = fmt::format("authenticating to {}", socket.peer());
  const Frame challenge =
      receiveFrameOfType(socket, FrameType::kChallenge, deadline, abortFlag, what);
  std::array<uint8_t, kNonceBytes> nonceB;
  randomBytes(nonceB);
  const Mac mine = proof(kConnectorLabel, secret, challenge.payload, nonceB, claim);
  WireWriter response;
  response.bytes(nonceB);
  response.bytes(mine);
  response.bytes(claim);
  sendFrame(socket, FrameType::kResponse, response.data(), deadline, abortFlag, what);

  Frame confirm;
  try {
    confirm = receiveFrameOfType(socket, FrameType::kConfirm, deadline, abortFlag, what);
  } catch (const Error& e) {
    if (e.result() != weftRemoteError) throw;
    fail(weftRemoteError,
         "{}: the peer closed the connection instead of accepting our proof of the job's secret "
         "(is the unique id from this job, and is the peer the one we expect?): {}",
         what, e.what());
  }
  const Mac expected = proof(kAcceptorLabel, secret, challenge.payload, nonceB, claim);
  if (sodium_memcmp(confirm.payload.data(), expected.data(), kMacBytes) != 0)
    fail(weftRemoteError,
         "{}: the peer does not know the job's secret (a stale unique id, or a different job "
         "listening at that address?)",
         what);
}

AcceptorHandshake::AcceptorHandshake(const Secret& secret) : secret_(secret) {}

void AcceptorHandshake::start(Socket& socket) {
  randomBytes(nonceA_);
  sendSmallFrame(socket, FrameType::kChallenge, nonceA_);
}

bool AcceptorHandshake::onReadable(Socket& socket) {
  if (verified_)
    fail(weftRemoteError, "{} sent data before the handshake was confirmed", socket.peer());
  if (!reader_.readSome(socket)) return false;
  const Frame response = reader_.take();
  if (response.type != FrameType::kResponse)
    fail(weftRemoteError, "{} sent a {} message instead of a handshake response", socket.peer(),
         frameTypeName(response.type));
  WireReader r(response.payload, fmt::format("handshake response from {}", socket.peer()));
  Mac theirs;
  r.bytes(nonceB_);
  r.bytes(theirs);
  claim_.assign(r.rest().begin(), r.rest().end());
  const Mac expected = proof(kConnectorLabel, secret_, nonceA_, nonceB_, claim_);
  if (sodium_memcmp(theirs.data(), expected.data(), kMacBytes) != 0)
    fail(weftRemoteError, "{} failed authentication (wrong secret: a stale or foreign unique id?)",
         socket.peer());
  verified_ = true;
  return true;
}

void AcceptorHandshake::confirm(Socket& socket) {
  if (!verified_) fail(weftInternalError, "confirming an unverified handshake");
  const Mac mine = proof(kAcceptorLabel, secret_, nonceA_, nonceB_, claim_);
  sendSmallFrame(socket, FrameType::kConfirm, mine);
}

Socket acceptAuthenticated(int listenFd, const Secret& secret, const ClaimCheck& check,
                           Deadline deadline, const std::atomic<bool>* abortFlag,
                           const std::atomic<bool>* stopFlag, std::string_view what) {
  struct Pending {
    Socket socket;
    std::unique_ptr<AcceptorHandshake> handshake;
    Deadline until;
  };
  std::vector<Pending> pending;
  // Whoever is still authenticating when this returns or throws is closed, and said so.
  struct CloseLeftovers {
    std::vector<Pending>& pending;
    std::string_view what;
    ~CloseLeftovers() {
      for (const Pending& p : pending)
        WEFT_WARN(kSubsysBoot, "bootstrap: {}: closing unauthenticated connection from {}", what,
                  p.socket.peer());
    }
  } closeLeftovers{pending, what};
  auto drop = [&](size_t i, std::string_view why) {
    WEFT_WARN(kSubsysBoot, "bootstrap: {}: dropped connection from {}: {}", what,
              pending[i].socket.peer(), why);
    pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
  };
  std::vector<pollfd> fds;
  for (;;) {
    if (abortRequested(abortFlag) || abortRequested(stopFlag)) failAborted(what);
    if (deadline.expired()) fail(weftTimeout, "{}: timed out", what);

    fds.assign(1, pollfd{listenFd, POLLIN, 0});
    Deadline wake = Deadline::afterMs(kAbortPollMs).earlier(deadline);
    for (const Pending& p : pending) {
      fds.push_back(pollfd{p.socket.fd(), POLLIN, 0});
      wake = wake.earlier(p.until);
    }
    if (::poll(fds.data(), fds.size(), wake.remainingMs()) < 0 && errno != EINTR)
      failErrno(errno, fmt::format("{}: poll", what));

    // Handshakes in progress first (fds[1..] match pending[0..] until something is erased).
    const size_t polled = fds.size() - 1;
    for (size_t i = polled; i-- > 0;) {
      if (fds[i + 1].revents == 0) {
        if (pending[i].until.expired())
          drop(i, fmt::format("did not authenticate within {} ms", kHandshakeTimeoutMs));
        continue;
      }
      try {
        if (!pending[i].handshake->onReadable(pending[i].socket)) continue;
        const std::string why = check(pending[i].handshake->claim());
        if (!why.empty()) {
          drop(i, why);
          continue;
        }
        pending[i].handshake->confirm(pending[i].socket);
        Socket accepted = std::move(pending[i].socket);
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
        return accepted;
      } catch (const std::exception& e) {
        drop(i, e.what());
      }
    }
    if (fds[0].revents != 0) {
      for (;;) {
        Socket socket = acceptPending(listenFd);
        if (!socket.valid()) break;
        auto handshake = std::make_unique<AcceptorHandshake>(secret);
        try {
          handshake->start(socket);
        } catch (const std::exception& e) {
          WEFT_WARN(kSubsysBoot, "bootstrap: {}: dropped connection from {}: {}", what,
                    socket.peer(), e.what());
          continue;
        }
        pending.push_back(Pending{std::move(socket), std::move(handshake),
                                  Deadline::afterMs(kHandshakeTimeoutMs)});
      }
    }
  }
}

}  // namespace weft
