// Strangers (no secret, garbage, silence) must neither disturb a job that is forming nor be
// trusted; the root and the ring listeners close their connections.
#include <sys/socket.h>

#include <catch2/catch.hpp>

#include <thread>

#include "lib/bootstrap/frame.hpp"
#include "lib/bootstrap/handshake.hpp"
#include "rank_threads.hpp"

using namespace weft;
using namespace weft::test;

namespace {

void requireJoined(const std::vector<Outcome>& outcomes) {
  for (size_t r = 0; r < outcomes.size(); ++r) {
    INFO("rank " << r << ": " << outcomes[r].message);
    REQUIRE(outcomes[r].ok());
  }
}

std::vector<uint8_t> randomGarbage(size_t n) {
  std::vector<uint8_t> bytes(n);
  randomBytes(bytes);
  bytes[0] = 'X';  // never the frame magic, whatever the random bytes
  return bytes;
}

Socket connectStranger(const SocketAddress& to) {
  return connectTo(to, Deadline::afterMs(kGenerousMs), nullptr);
}

// Forms a 3-rank job; `stranger` runs once two ranks have joined, before the third starts.
std::vector<Outcome> formAroundStranger(Root& root, const std::function<void()>& stranger) {
  std::vector<Outcome> outcomes(3);
  RankThreads threads;
  threads.join(outcomes[0], root.id(), 0, 3);
  threads.join(outcomes[1], root.id(), 1, 3);
  const bool twoJoined = root.waitForJoined(2, Deadline::afterMs(kGenerousMs));
  stranger();
  threads.join(outcomes[2], root.id(), 2, 3);
  threads.joinAll();
  REQUIRE(twoJoined);
  return outcomes;
}

}  // namespace

TEST_CASE("a stranger with a wrong secret is refused by the root and the job still forms") {
  auto root = startRoot();
  Socket stranger;
  weftResult_t strangerResult = weftSuccess;
  const auto outcomes = formAroundStranger(*root, [&] {
    stranger = connectStranger(root->id().root);
    Secret wrong = root->id().secret;
    wrong[0] ^= 0xff;
    try {
      authenticateToAcceptor(stranger, wrong, encodeClaim(Claim{}), Deadline::afterMs(kGenerousMs),
                             nullptr);
    } catch (const Error& e) {
      strangerResult = e.result();
    }
  });
  requireJoined(outcomes);
  CHECK(strangerResult == weftRemoteError);
  CHECK(closedByPeer(stranger.fd(), Deadline::afterMs(kGenerousMs)));
}

TEST_CASE("a stranger sending random bytes to the root is dropped and the job still forms") {
  auto root = startRoot();
  Socket garbage;
  Socket liar;  // a valid magic and version, then an absurd length
  const auto outcomes = formAroundStranger(*root, [&] {
    garbage = connectStranger(root->id().root);
    garbage.sendAll(randomGarbage(4096), Deadline::afterMs(kGenerousMs), nullptr, "garbage");
    liar = connectStranger(root->id().root);
    liar.sendAll(encodeHeader(FrameType::kResponse, 1u << 31), Deadline::afterMs(kGenerousMs),
                 nullptr, "lie");
  });
  requireJoined(outcomes);
  CHECK(closedByPeer(garbage.fd(), Deadline::afterMs(kGenerousMs)));
  CHECK(closedByPeer(liar.fd(), Deadline::afterMs(kGenerousMs)));
}

// A genuine rank's Response, as an eavesdropper records it: the rank answers a challenge that the
// recorder sent (its own nonce), with the job's real secret.
std::vector<uint8_t> recordGenuineResponse(const Secret& secret) {
  int ends[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, ends) == 0);
  Socket recorder(Fd(ends[0]), SocketAddress{});
  Socket rank(Fd(ends[1]), SocketAddress{});
  std::thread genuine([&] {
    try {
      authenticateToAcceptor(rank, secret, encodeClaim(Claim{}), Deadline::afterMs(kGenerousMs),
                             nullptr);
    } catch (const Error&) {
      // The recorder never confirms: it closes.
    }
  });
  std::array<uint8_t, kNonceBytes> nonce;
  randomBytes(nonce);
  sendFrame(recorder, FrameType::kChallenge, nonce, Deadline::afterMs(kGenerousMs), nullptr,
            "challenge");
  const Frame response = receiveFrameOfType(recorder, FrameType::kResponse,
                                            Deadline::afterMs(kGenerousMs), nullptr, "response");
  recorder.close();
  genuine.join();
  return encodeFrame(FrameType::kResponse, response.payload);
}

TEST_CASE("a replayed handshake is refused by the root and the job still forms") {
  auto root = startRoot();
  const std::vector<uint8_t> recorded = recordGenuineResponse(root->id().secret);
  Socket replayer;
  bool challenged = false, confirmed = false;
  const auto outcomes = formAroundStranger(*root, [&] {
    replayer = connectStranger(root->id().root);
    // The root's challenge carries a fresh nonce; the recorded MAC covers another one.
    receiveFrameOfType(replayer, FrameType::kChallenge, Deadline::afterMs(kGenerousMs), nullptr,
                       "challenge");
    challenged = true;
    replayer.sendAll(recorded, Deadline::afterMs(kGenerousMs), nullptr, "replay");
    // Accepted, the root would confirm; refused, it closes the connection.
    try {
      receiveFrame(replayer, Deadline::afterMs(kGenerousMs), nullptr, "confirm");
      confirmed = true;
    } catch (const Error&) {
    }
  });
  requireJoined(outcomes);
  CHECK(challenged);
  CHECK_FALSE(confirmed);
}

TEST_CASE("a stranger that connects to the root and says nothing does not block the job") {
  auto root = startRoot();
  Socket silent;
  const auto outcomes =
      formAroundStranger(*root, [&] { silent = connectStranger(root->id().root); });
  requireJoined(outcomes);
  // The one-round root is done and closes everything it still holds.
  CHECK(closedByPeer(silent.fd(), Deadline::afterMs(kGenerousMs)));
}

TEST_CASE("an unlimited root drops a silent stranger after its handshake time and keeps serving") {
  RootOptions options;
  options.rounds = 0;
  options.handshakeTimeoutMs = 200;
  auto root = startRoot(options);
  Socket silent = connectStranger(root->id().root);
  CHECK(closedByPeer(silent.fd(), Deadline::afterMs(kGenerousMs)));
  CHECK(root->running());
  requireJoined(formAll(root->id(), 2));
}

TEST_CASE("strangers at a rank's ring listener do not disturb the ring") {
  auto root = startRoot();
  std::vector<Outcome> outcomes(3);
  Socket garbage;
  Socket silent;
  Socket wrongSecret;
  Outcome wrongSecretOutcome;
  {
    RankThreads threads;
    threads.join(outcomes[0], root->id(), 0, 3);
    threads.join(outcomes[1], root->id(), 1, 3);
    REQUIRE(root->waitForJoined(2, Deadline::afterMs(kGenerousMs)));
    // Rank 1 accepts rank 0 on this listener once the table is out; the strangers are there
    // first, queued in the listen backlog.
    SocketAddress listener;
    for (const JoinedRank& j : root->joined())
      if (j.rank == 1) listener = j.info.address;
    REQUIRE_FALSE(listener.empty());
    garbage = connectStranger(listener);
    garbage.sendAll(randomGarbage(512), Deadline::afterMs(kGenerousMs), nullptr, "garbage");
    silent = connectStranger(listener);
    wrongSecret = connectStranger(listener);
    threads.spawn([&] {
      Secret wrong{};
      capture(wrongSecretOutcome, [&] {
        authenticateToAcceptor(wrongSecret, wrong, encodeClaim(Claim{Claim::kRingLink, 0, {}}),
                               Deadline::afterMs(kGenerousMs), nullptr);
      });
    });
    threads.join(outcomes[2], root->id(), 2, 3);
  }
  CHECK(wrongSecretOutcome.result == weftRemoteError);
  requireJoined(outcomes);
  CHECK(closedByPeer(garbage.fd(), Deadline::afterMs(kGenerousMs)));
  CHECK(closedByPeer(silent.fd(), Deadline::afterMs(kGenerousMs)));

  std::vector<std::vector<std::vector<uint8_t>>> results(3);
  {
    RankThreads threads;
    for (int r = 0; r < 3; ++r)
      threads.spawn([&, r] {
        capture(outcomes[static_cast<size_t>(r)], [&] {
          results[static_cast<size_t>(r)] = outcomes[static_cast<size_t>(r)].boot->allGather(
              std::vector<uint8_t>(static_cast<size_t>(r), static_cast<uint8_t>(r)),
              Deadline::afterMs(kGenerousMs));
        });
      });
  }
  requireJoined(outcomes);
  for (int r = 0; r < 3; ++r)
    CHECK(results[static_cast<size_t>(r)] == std::vector<std::vector<uint8_t>>{{}, {1}, {2, 2}});
}
