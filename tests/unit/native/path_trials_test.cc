#include "algorithms/shm/path_trials.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using weft::Collective;
using weft::PathTrials;
using Choice = PathTrials::Choice;
using Stage = PathTrials::Stage;

namespace {

// Runs one class's trials as one rank does, timing each call `staged`, `cma` or `cached`
// seconds by its path, and returns the decision; `order` gets the paths the trials ran.
PathTrials::Decision runTrials(PathTrials& trials, Collective c, uint64_t bytes, double staged,
                               double cma, double cached, std::vector<Choice>* order = nullptr) {
  for (int k = 0; k < PathTrials::kTrials; ++k) {
    const PathTrials::Step step = trials.step(c, bytes);
    REQUIRE(step.stage == Stage::Trial);
    REQUIRE(step.trial == k);
    if (order) order->push_back(step.choice);
    trials.record(step.choice == Choice::Cma            ? cma
                  : step.choice == Choice::StagedCached ? cached
                                                        : staged);
  }
  REQUIRE(trials.step(c, bytes).stage == Stage::Decide);
  return trials.decide({trials.medians()});
}

// Runs both probes of the class that follows a probing decision, as one rank does: each call
// must be a probe, `seconds(step)` is what it records; the call after them must decide.
template <class Seconds>
void runProbes(PathTrials& trials, Collective c, uint64_t bytes, const Seconds& seconds) {
  for (int k = 0; k < 2 * PathTrials::kProbeCalls; ++k) {
    const PathTrials::Step step = trials.step(c, bytes);
    REQUIRE(step.stage == Stage::Probe);
    trials.record(seconds(step));
  }
  REQUIRE(trials.step(c, bytes).stage == Stage::Decide);
}

}  // namespace

TEST_CASE("PathTrials runs blocks of staged, cached, CMA, CMA, cached, staged calls") {
  PathTrials trials;
  std::vector<Choice> order;
  const PathTrials::Decision d =
      runTrials(trials, Collective::AllGather, 1 << 20, 2e-3, 1e-3, 1.5e-3, &order);
  std::vector<Choice> expected;
  for (Choice c : {Choice::Staged, Choice::StagedCached, Choice::Cma, Choice::Cma,
                   Choice::StagedCached, Choice::Staged})
    for (int i = 0; i < PathTrials::kBlock; ++i) expected.push_back(c);
  CHECK(order == expected);
  INFO(d.line);
  CHECK(d.choice == Choice::Cma);
  // About kHoldSeconds of calls at the chosen path's median time.
  CHECK(d.holdCalls == static_cast<uint32_t>(PathTrials::kHoldSeconds / 1e-3));
  CHECK(d.line.find("CMA (slowest of 1 ranks' medians: staged 2000.0 us, staged with cached "
                    "stores 1500.0 us, CMA 1000.0 us) for the next") != std::string::npos);
  // Every rank takes rank 0's decision in the decide call, and holds it that many calls.
  trials.hold(d.choice, 3);
  for (int k = 0; k < 3; ++k) {
    const PathTrials::Step step = trials.step(Collective::AllGather, (1 << 20) + 1000);
    CHECK(step.stage == Stage::Hold);
    CHECK(step.choice == Choice::Cma);
    trials.record(1.0);  // not a trial: ignored
  }
  // Then the class is tried again, from the first trial.
  const PathTrials::Step again = trials.step(Collective::AllGather, 1 << 20);
  CHECK(again.stage == Stage::Trial);
  CHECK(again.trial == 0);
  // Each collective and size class has its own trials.
  CHECK(trials.step(Collective::AlltoAll, 1 << 20).stage == Stage::Trial);
  CHECK(trials.step(Collective::AllGather, 2 << 20).trial == 0);
}

TEST_CASE("PathTrials decides staging where it is faster, and where CMA never ran") {
  PathTrials trials;
  const PathTrials::Decision d =
      runTrials(trials, Collective::AllReduce, 4 << 20, 1e-3, 3e-3, 1e-3);
  CHECK(d.choice == Choice::Staged);  // (a tie with cached stores keeps streaming)
  // A trial that went another way (buffers every rank maps) is not recorded: with no CMA time,
  // staging is kept, for the fewest calls.
  PathTrials other;
  for (int k = 0; k < PathTrials::kTrials; ++k) {
    const PathTrials::Step step = other.step(Collective::Broadcast, 1 << 20);
    if (step.choice != Choice::Cma) other.record(5e-3);
  }
  REQUIRE(other.step(Collective::Broadcast, 1 << 20).stage == Stage::Decide);
  const PathTrials::Decision none = other.decide({other.medians()});
  CHECK(none.choice == Choice::Staged);
  CHECK(none.holdCalls >= PathTrials::kMinHoldCalls);
}

TEST_CASE("PathTrials keeps a broadcast whose root is in place apart from one that is not") {
  PathTrials trials;
  // Out of place first: staging wins there.
  const PathTrials::Decision outOfPlace =
      runTrials(trials, Collective::Broadcast, 1 << 20, 35e-6, 47e-6, 40e-6);
  CHECK(outOfPlace.choice == Choice::Staged);
  trials.hold(outOfPlace.choice, 1000);
  // The same size with the root in place is tried from the start, and through CMA it wins.
  for (int k = 0; k < PathTrials::kTrials; ++k) {
    const PathTrials::Step step = trials.step(Collective::Broadcast, 1 << 20, true);
    REQUIRE(step.stage == Stage::Trial);
    REQUIRE(step.trial == k);
    trials.record(step.choice == Choice::Cma ? 24e-6 : 35e-6);  // (cached stores: as staged)
  }
  REQUIRE(trials.step(Collective::Broadcast, 1 << 20, true).stage == Stage::Decide);
  const PathTrials::Decision inPlace = trials.decide({trials.medians()});
  INFO(inPlace.line);
  CHECK(inPlace.choice == Choice::Cma);
  CHECK(inPlace.line.find("Broadcast (root in place) with blocks of 1048576 B") !=
        std::string::npos);
  trials.hold(inPlace.choice, 1000);
  // Each holds its own decision.
  CHECK(trials.step(Collective::Broadcast, 1 << 20, true).choice == Choice::Cma);
  CHECK(trials.step(Collective::Broadcast, 1 << 20).choice == Choice::Staged);
  CHECK(trials.step(Collective::Broadcast, 1 << 20, true).choice == Choice::Cma);
}

TEST_CASE("PathTrials names an allreduce class in place as such") {
  PathTrials trials;
  const PathTrials::Decision outOfPlace =
      runTrials(trials, Collective::AllReduce, 16 << 20, 7.4e-3, 9.4e-3, 7.6e-3);
  CHECK(outOfPlace.choice == Choice::Staged);
  CHECK(outOfPlace.line.find("AllReduce with blocks of 16777216 B") != std::string::npos);
  trials.hold(outOfPlace.choice, 1000);
  for (int k = 0; k < PathTrials::kTrials; ++k) {
    const PathTrials::Step step = trials.step(Collective::AllReduce, 16 << 20, true);
    REQUIRE(step.stage == Stage::Trial);
    trials.record(step.choice == Choice::Cma ? 5.0e-3 : 7.4e-3);
  }
  REQUIRE(trials.step(Collective::AllReduce, 16 << 20, true).stage == Stage::Decide);
  const PathTrials::Decision inPlace = trials.decide({trials.medians()});
  INFO(inPlace.line);
  CHECK(inPlace.choice == Choice::Cma);
  CHECK(inPlace.line.find("AllReduce (in place) with blocks of 16777216 B") != std::string::npos);
}

TEST_CASE("PathTrials leaves out the first call of each block and one slow outlier") {
  PathTrials trials;
  // CMA is faster, except that the first call after each switch is very slow and one counted
  // CMA call is an outlier: the lower median of the rest still says CMA.
  int cmaCounted = 0;
  for (int k = 0; k < PathTrials::kTrials; ++k) {
    const PathTrials::Step step = trials.step(Collective::AllReduce, 64 << 10);
    double t = step.choice == Choice::Cma ? 1e-3 : 2e-3;  // (cached stores: as staged)
    if (!weft::trialCounts(k))
      t = 1.0;
    else if (step.choice == Choice::Cma && cmaCounted++ == 0)
      t = 5e-3;
    trials.record(t);
  }
  REQUIRE(trials.step(Collective::AllReduce, 64 << 10).stage == Stage::Decide);
  const PathTrials::Decision d = trials.decide({trials.medians()});
  INFO(d.line);
  CHECK(d.choice == Choice::Cma);
  for (int j = 0; j < PathTrials::kTrials; ++j)
    CHECK(weft::trialCounts(j) == (j % PathTrials::kBlock != 0));
}

TEST_CASE("PathTrials decides by the slowest rank's median of each path") {
  PathTrials trials;
  trials.step(Collective::Broadcast, 1 << 20);
  // The root (rank 0) finds CMA faster; a receiver finds it slower, and is the slowest rank.
  const std::vector<PathTrials::Medians> ranks = {
      {2e-3, 1e-3, 3e-3}, {2.5e-3, 4e-3, 2e-3}, {2e-3, 3e-3, 2.6e-3}};
  const PathTrials::Decision d = trials.decide(ranks);
  INFO(d.line);
  CHECK(d.choice == Choice::Staged);
  // (Cached stores' slowest median is within kProbeMargin: the two are probed first.)
  CHECK(d.probe);
  CHECK(d.runnerUp == Choice::StagedCached);
  CHECK(d.line.find("staged (slowest of 3 ranks' medians: staged 2500.0 us, staged with cached "
                    "stores 3000.0 us, CMA 4000.0 us); staged with cached stores within 1.25x: "
                    "each probed for 36 calls first") != std::string::npos);
  // A rank with no CMA time (its trials went another way): staging.
  CHECK(trials.decide({{2e-3, 1e-3}, {2e-3, 0}}).choice == Choice::Staged);
  CHECK(trials.decide({{2e-3, 1e-3}, {3e-3, 1.5e-3}}).choice == Choice::Cma);
  CHECK(trials.decide({}).choice == Choice::Staged);
  // Cached stores where their slowest rank is fastest, and only where every rank timed them.
  CHECK(trials.decide({{2e-3, 3e-3, 1e-3}, {2.2e-3, 3e-3, 1.8e-3}}).choice == Choice::StagedCached);
  CHECK(trials.decide({{2e-3, 1.5e-3, 1e-3}}).choice == Choice::StagedCached);
  CHECK(trials.decide({{2e-3, 3e-3, 1e-3}, {2e-3, 3e-3, 0}}).choice == Choice::Staged);
  CHECK(trials.decide({{2e-3, 1.5e-3, 1e-3}, {2e-3, 1.5e-3, 0}}).choice == Choice::Cma);
}

TEST_CASE("PathTrials probes a close runner-up after the winner, and decides from the probes") {
  PathTrials trials;
  // CMA's trial calls come just after a switch and run slow: 1.1x staging's.
  const PathTrials::Decision d =
      runTrials(trials, Collective::AllReduce, 4 << 20, 2e-3, 2.2e-3, 3e-3);
  INFO(d.line);
  REQUIRE(d.probe);
  CHECK(d.choice == Choice::Staged);
  CHECK(d.runnerUp == Choice::Cma);
  trials.follow(d);
  // The winner first, then the runner-up, kProbeCalls each; the later half of each counts.
  int k = 0;
  runProbes(trials, Collective::AllReduce, 4 << 20, [&](const PathTrials::Step& step) {
    CHECK(step.trial == k);
    CHECK(step.choice == (k < PathTrials::kProbeCalls ? Choice::Staged : Choice::Cma));
    CHECK(weft::probeCounts(k) == (k % PathTrials::kProbeCalls >= PathTrials::kProbeCalls / 2));
    // Settled, CMA runs faster (1.5 and 1.6 ms, by turns: the lower median of the counted
    // half is 1.5, of all calls 1.6); its first calls (not counted) ran slower still.
    const double seconds = step.choice == Choice::Staged ? 2e-3
                           : !weft::probeCounts(k)       ? 4e-3
                           : k % 2                       ? 1.6e-3
                                                         : 1.5e-3;
    ++k;
    return seconds;
  });
  CHECK(k == 2 * PathTrials::kProbeCalls);
  const PathTrials::Medians m = trials.medians();
  CHECK(m.staged == 2e-3);
  CHECK(m.cma == 1.5e-3);
  CHECK(m.cached == 0);  // (not probed)
  const PathTrials::Decision after = trials.decide({m});
  INFO(after.line);
  CHECK(after.choice == Choice::Cma);
  CHECK_FALSE(after.probe);  // (the probes have run: no second round of them)
  CHECK(after.line.find("AllReduce with blocks of 4194304 B to twice that: CMA (slowest of 1 "
                        "ranks' medians over the probes: staged 2000.0 us, staged with cached "
                        "stores -, CMA 1500.0 us) for the next") != std::string::npos);
  trials.follow(after);
  CHECK(trials.step(Collective::AllReduce, 4 << 20).stage == Stage::Hold);
  CHECK(trials.step(Collective::AllReduce, 4 << 20).choice == Choice::Cma);
}

TEST_CASE("PathTrials keeps the winner where the probes confirm it, and probes again next round") {
  PathTrials trials;
  const PathTrials::Decision d =
      runTrials(trials, Collective::AlltoAll, 1 << 20, 300e-6, 290e-6, 280e-6);
  REQUIRE(d.probe);
  CHECK(d.choice == Choice::StagedCached);
  CHECK(d.runnerUp == Choice::Cma);
  trials.follow(d);
  runProbes(trials, Collective::AlltoAll, 1 << 20, [](const PathTrials::Step& step) {
    return step.choice == Choice::Cma ? 320e-6 : 280e-6;
  });
  // A rank whose CMA probe calls went another way (not recorded) rules CMA out.
  const PathTrials::Decision after = trials.decide({trials.medians(), {0, 0, 200e-6}});
  CHECK(after.choice == Choice::StagedCached);
  CHECK_FALSE(after.probe);
  trials.follow(after);
  trials.hold(after.choice, 2);  // (a shorter hold, to reach the next round)
  CHECK(trials.step(Collective::AlltoAll, 1 << 20).choice == Choice::StagedCached);
  CHECK(trials.step(Collective::AlltoAll, 1 << 20).choice == Choice::StagedCached);
  // The next round tries every path again, and a close runner-up is probed again.
  CHECK(runTrials(trials, Collective::AlltoAll, 1 << 20, 300e-6, 290e-6, 280e-6).probe);
  // A runner-up beyond kProbeMargin is not probed: the winner is held at once.
  PathTrials far;
  const PathTrials::Decision clear =
      runTrials(far, Collective::AlltoAll, 1 << 20, 300e-6, 260e-6, 200e-6);
  CHECK_FALSE(clear.probe);
  far.follow(clear);
  CHECK(far.step(Collective::AlltoAll, 1 << 20).stage == Stage::Hold);
}

TEST_CASE("PathTrials holds a class from call kTuningCalls + 1 on, probes and all") {
  // A close runner-up (CMA within kProbeMargin of staging) takes the longest way to a hold:
  // every call up to the first held one is counted, as a benchmark's warm-up would be.
  for (const double cma : {2.2e-3, 3e-3}) {
    PathTrials trials;
    int calls = 0;
    bool probed = false;
    for (;;) {
      const PathTrials::Step step = trials.step(Collective::AllGather, 1 << 20);
      ++calls;
      REQUIRE(calls <= 10 * PathTrials::kTuningCalls);
      if (step.stage == Stage::Hold) break;
      if (step.stage == Stage::Decide) {
        const PathTrials::Decision d = trials.decide({trials.medians()});
        probed = probed || d.probe;
        trials.follow(d);
        continue;
      }
      trials.record(step.choice == Choice::Cma            ? cma
                    : step.choice == Choice::StagedCached ? 4e-3
                                                          : 2e-3);
    }
    INFO("CMA " << cma << " s a call");
    CHECK(probed == (cma < 2e-3 * PathTrials::kProbeMargin));
    CHECK(calls - 1 == (probed ? PathTrials::kTuningCalls : PathTrials::kTrials + 1));
  }
}

TEST_CASE("PathTrials chooses and holds staging with cached stores where they are fastest") {
  PathTrials trials;
  const PathTrials::Decision d =
      runTrials(trials, Collective::AlltoAll, 4 << 20, 300e-6, 500e-6, 200e-6);
  INFO(d.line);
  CHECK(d.choice == Choice::StagedCached);
  CHECK(d.line.find("AlltoAll with blocks of 4194304 B to twice that: staged with cached stores "
                    "(slowest of 1 ranks' medians: staged 300.0 us, staged with cached stores "
                    "200.0 us, CMA 500.0 us)") != std::string::npos);
  CHECK(d.holdCalls == static_cast<uint32_t>(PathTrials::kHoldSeconds / 200e-6));
  trials.hold(d.choice, 2);
  for (int k = 0; k < 2; ++k)
    CHECK(trials.step(Collective::AlltoAll, 4 << 20).choice == Choice::StagedCached);
  CHECK(trials.step(Collective::AlltoAll, 4 << 20).stage == Stage::Trial);
  CHECK(std::string(weft::choiceName(Choice::StagedCached)) == "staged with cached stores");
}

TEST_CASE("PathTrials holds a decision for kHoldSeconds of calls, within its bounds") {
  PathTrials trials;
  // 1 ns calls: the most calls; 100 s calls: the fewest.
  CHECK(runTrials(trials, Collective::AllReduce, 8, 1e-9, 2e-9, 2e-9).holdCalls ==
        PathTrials::kMaxHoldCalls);
  CHECK(runTrials(trials, Collective::AllReduce, 1 << 30, 100, 200, 200).holdCalls ==
        PathTrials::kMinHoldCalls);
  // Long calls (60 ms: 2 ranks, 256 MiB) hold at least 20 trial rounds' worth, so that the
  // trials, two thirds of them on slower paths, stay a twentieth of the calls.
  CHECK(runTrials(trials, Collective::AllReduce, 256 << 20, 0.12, 0.06, 0.1).holdCalls >=
        20 * PathTrials::kTrials);
}

TEST_CASE("PathTrials::sizeClass is the power of two at or below") {
  CHECK(PathTrials::sizeClass(0) == 0);
  CHECK(PathTrials::sizeClass(1) == 0);
  CHECK(PathTrials::sizeClass(2) == 1);
  CHECK(PathTrials::sizeClass(3) == 1);
  CHECK(PathTrials::sizeClass(1 << 20) == 20);
  CHECK(PathTrials::sizeClass((2 << 20) - 1) == 20);
  CHECK(PathTrials::sizeClass(uint64_t{1} << 40) == 40);
}

TEST_CASE("startedEarlierNs: how long before mine the first rank started the same call") {
  using weft::callStartStamp;
  using weft::startedEarlierNs;
  const uint64_t mine = callStartStamp(7, 1'000'000);
  // Peers that started the same call 300 and 40 ns before me, and one that started after me.
  const std::vector<uint64_t> same = {callStartStamp(7, 999'700), mine, callStartStamp(7, 999'960),
                                      callStartStamp(7, 1'000'500)};
  CHECK(startedEarlierNs(same, mine) == 300);
  // A peer still on the call before (or one whose stamp is of another call) does not count,
  // however early its stamp.
  const std::vector<uint64_t> stale = {callStartStamp(6, 10), mine, callStartStamp(8, 20)};
  CHECK(startedEarlierNs(stale, mine) == 0);
  CHECK(startedEarlierNs({}, mine) == 0);
  // Call numbers and clocks wrap: call 65536 + 7 is call 7's stamp, and a peer 15 ns before a
  // clock that has just passed 2^48 is 15 ns earlier.
  const uint64_t wrapped = callStartStamp(65536 + 7, (int64_t{1} << 48) + 5);
  CHECK(wrapped == callStartStamp(7, 5));
  const std::vector<uint64_t> acrossWrap = {callStartStamp(7, (int64_t{1} << 48) - 10), wrapped};
  CHECK(startedEarlierNs(acrossWrap, wrapped) == 15);
}
