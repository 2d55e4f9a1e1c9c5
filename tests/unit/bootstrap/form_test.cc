#include <unistd.h>

#include <catch2/catch.hpp>

#include "lib/bootstrap/host_id.hpp"
#include "rank_threads.hpp"

using namespace weft;
using namespace weft::test;

namespace {

// Rank r's contribution to allGather number `round`: some ranks give nothing, others a few
// bytes, one a megabyte (more than a socket buffer holds, so sends and receives interleave).
std::vector<uint8_t> blobOf(int rank, int round) {
  size_t size = 0;
  if ((rank + round) % 3 == 1) size = static_cast<size_t>(rank) * 10 + static_cast<size_t>(round) + 1;
  if ((rank + round) % 3 == 2) size = static_cast<size_t>(rank) * 1000 + 7;
  if (rank == 1 && round == 1) size = size_t{1} << 20;
  std::vector<uint8_t> blob(size);
  for (size_t i = 0; i < size; ++i) blob[i] = static_cast<uint8_t>(rank * 31 + round * 7 + i);
  return blob;
}

void requireFormed(const std::vector<Outcome>& outcomes) {
  for (size_t r = 0; r < outcomes.size(); ++r) {
    INFO("rank " << r << ": " << outcomes[r].message);
    REQUIRE(outcomes[r].ok());
    REQUIRE(outcomes[r].boot);
  }
}

}  // namespace

TEST_CASE("1, 2, 3, 5 and 8 ranks form a communicator and agree on its id and members") {
  for (int n : {1, 2, 3, 5, 8}) {
    INFO("nranks " << n);
    auto root = startRoot();
    const std::vector<Outcome> outcomes = formAll(root->id(), n);
    requireFormed(outcomes);
    for (int r = 0; r < n; ++r) {
      const Bootstrap& b = *outcomes[static_cast<size_t>(r)].boot;
      CHECK(b.rank() == r);
      CHECK(b.nranks() == n);
      CHECK(b.commId() == outcomes[0].boot->commId());
      for (int peer = 0; peer < n; ++peer) {
        CHECK(b.rankInfo(peer).pid == ::getpid());
        CHECK(b.rankInfo(peer).hostId == hostIdentity());
        CHECK(b.rankInfo(peer).address ==
              outcomes[static_cast<size_t>(r)].boot->rankInfo(peer).address);
      }
    }
    CHECK(outcomes[0].boot->commId() != CommId{});
  }
}

TEST_CASE(
    "allGather returns every rank's blob at its index, whatever the sizes, and barrier "
    "returns only once every rank has entered") {
  for (int n : {1, 2, 3, 5, 8}) {
    INFO("nranks " << n);
    auto root = startRoot();
    std::vector<Outcome> outcomes = formAll(root->id(), n);
    requireFormed(outcomes);

    constexpr int kRounds = 3;
    std::vector<std::vector<std::vector<std::vector<uint8_t>>>> gathered(
        static_cast<size_t>(n), std::vector<std::vector<std::vector<uint8_t>>>(kRounds));
    std::atomic<int> entered{0};
    std::vector<int> seenAfterBarrier(static_cast<size_t>(n), -1);
    {
      RankThreads threads;
      for (int r = 0; r < n; ++r) {
        threads.spawn([&, r] {
          Outcome& out = outcomes[static_cast<size_t>(r)];
          capture(out, [&] {
            for (int round = 0; round < kRounds; ++round)
              gathered[static_cast<size_t>(r)][static_cast<size_t>(round)] =
                  out.boot->allGather(blobOf(r, round), Deadline::afterMs(kGenerousMs));
            entered.fetch_add(1);
            out.boot->barrier(Deadline::afterMs(kGenerousMs));
            seenAfterBarrier[static_cast<size_t>(r)] = entered.load();
          });
        });
      }
    }
    for (int r = 0; r < n; ++r) {
      INFO("rank " << r << ": " << outcomes[static_cast<size_t>(r)].message);
      REQUIRE(outcomes[static_cast<size_t>(r)].ok());
      CHECK(seenAfterBarrier[static_cast<size_t>(r)] == n);
      for (int round = 0; round < kRounds; ++round) {
        const auto& all = gathered[static_cast<size_t>(r)][static_cast<size_t>(round)];
        REQUIRE(all.size() == static_cast<size_t>(n));
        for (int from = 0; from < n; ++from)
          CHECK(all[static_cast<size_t>(from)] == blobOf(from, round));
      }
    }
  }
}

TEST_CASE("an unlimited root forms consecutive communicators, each with a fresh id") {
  RootOptions options;
  options.rounds = 0;
  auto root = startRoot(options);
  const std::vector<Outcome> first = formAll(root->id(), 3);
  requireFormed(first);
  const std::vector<Outcome> second = formAll(root->id(), 3);
  requireFormed(second);
  CHECK(first[0].boot->commId() != second[0].boot->commId());
  CHECK(second[2].boot->commId() == second[0].boot->commId());
  CHECK(root->roundsServed() == 2);
  CHECK(root->running());

  // Both communicators work, independently.
  std::vector<std::vector<std::vector<uint8_t>>> results(6);
  std::vector<Outcome> status(6);
  {
    RankThreads threads;
    for (int i = 0; i < 6; ++i)
      threads.spawn([&, i] {
        Bootstrap& b =
            i < 3 ? *first[static_cast<size_t>(i)].boot : *second[static_cast<size_t>(i - 3)].boot;
        capture(status[static_cast<size_t>(i)], [&] {
          results[static_cast<size_t>(i)] = b.allGather(
              std::vector<uint8_t>{static_cast<uint8_t>(i)}, Deadline::afterMs(kGenerousMs));
        });
      });
  }
  for (int i = 0; i < 6; ++i) {
    INFO(status[static_cast<size_t>(i)].message);
    REQUIRE(status[static_cast<size_t>(i)].ok());
    const uint8_t base = i < 3 ? 0 : 3;
    CHECK(results[static_cast<size_t>(i)] ==
          std::vector<std::vector<uint8_t>>{{base}, {uint8_t(base + 1)}, {uint8_t(base + 2)}});
  }
  root->stop();
}

TEST_CASE("a one-round root finishes once its communicator has formed") {
  auto root = startRoot();
  requireFormed(formAll(root->id(), 2));
  CHECK(root->waitFinished(Deadline::afterMs(kGenerousMs)));  // ranks may return before it ends
  CHECK(root->joined().empty());
  CHECK(root->roundsServed() == 1);
}
