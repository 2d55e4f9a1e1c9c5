#include "algorithms/shm/path_trials.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using weft::Collective;
using weft::PathTrials;
using Choice = PathTrials::Choice;

namespace {

// Runs one class's trials, timing each call `staged` or `cma` seconds by its path, and returns
// the paths the trials ran and the line the last one returned; `now` is the clock they see.
std::string runTrials(PathTrials& trials, Collective c, uint64_t bytes, double staged, double cma,
                      std::vector<Choice>* order = nullptr, double now = 0) {
  std::string line;
  for (int k = 0; k < PathTrials::kTrials; ++k) {
    const PathTrials::Next next = trials.next(c, bytes, now);
    REQUIRE(next.trial);
    if (order) order->push_back(next.choice);
    line = trials.record(next.choice == Choice::Cma ? cma : staged);
    if (k + 1 < PathTrials::kTrials) REQUIRE(line.empty());
  }
  return line;
}

}  // namespace

TEST_CASE("PathTrials runs blocks of staged, CMA, CMA, staged calls, then keeps the faster") {
  PathTrials trials;
  std::vector<Choice> order;
  const std::string line = runTrials(trials, Collective::AllGather, 1 << 20, 2e-3, 1e-3, &order);
  std::vector<Choice> expected;
  for (Choice c : {Choice::Staged, Choice::Cma, Choice::Cma, Choice::Staged})
    for (int i = 0; i < PathTrials::kBlock; ++i) expected.push_back(c);
  CHECK(order == expected);
  INFO(line);
  CHECK(line.find("CMA (median of 4 calls 1000.0 us, staged 2000.0 us)") != std::string::npos);
  for (int k = 0; k < 3; ++k) {
    const PathTrials::Next next = trials.next(Collective::AllGather, (1 << 20) + 1000, 0);
    CHECK(!next.trial);
    CHECK(next.choice == Choice::Cma);
    CHECK(trials.record(1.0).empty());  // nothing pending: ignored
  }
  // Staging faster: staging kept.
  runTrials(trials, Collective::AllGather, 4 << 20, 1e-3, 3e-3);
  CHECK(trials.next(Collective::AllGather, 4 << 20, 0).choice == Choice::Staged);
  // Each collective and size class has its own trials.
  CHECK(trials.next(Collective::AlltoAll, 1 << 20, 0).trial);
  CHECK(trials.next(Collective::AllGather, 2 << 20, 0).trial);
}

TEST_CASE("PathTrials leaves out the first call of each block and one slow outlier") {
  PathTrials trials;
  // CMA is faster, except that the first call after each switch is very slow and one counted
  // CMA call is an outlier: the lower median of the rest still says CMA.
  int k = 0, cmaCounted = 0;
  std::string line;
  for (; k < PathTrials::kTrials; ++k) {
    const PathTrials::Next next = trials.next(Collective::AllReduce, 64 << 10, 0);
    double t = next.choice == Choice::Cma ? 1e-3 : 2e-3;
    if (!weft::trialCounts(k))
      t = 1.0;
    else if (next.choice == Choice::Cma && cmaCounted++ == 0)
      t = 5e-3;
    line = trials.record(t);
  }
  INFO(line);
  CHECK(trials.next(Collective::AllReduce, 64 << 10, 0).choice == Choice::Cma);
  for (int j = 0; j < PathTrials::kTrials; ++j)
    CHECK(weft::trialCounts(j) == (j % PathTrials::kBlock != 0));
}

TEST_CASE("PathTrials: a cancelled trial is neither counted nor timed") {
  PathTrials trials;
  PathTrials::Next first = trials.next(Collective::AlltoAll, 1 << 20, 0);
  REQUIRE(first.trial);
  trials.cancel();
  CHECK(trials.record(99.0).empty());
  // Still at the first trial: a whole set of trials follows, and the cancelled time (99 s)
  // played no part.
  const std::string line = runTrials(trials, Collective::AlltoAll, 1 << 20, 1e-3, 2e-3);
  INFO(line);
  CHECK(line.find("staged (median of 4 calls 1000.0 us, CMA 2000.0 us)") != std::string::npos);
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

TEST_CASE("PathTrials tries a class again once its choice is kRetrialSeconds old") {
  PathTrials trials;
  runTrials(trials, Collective::AllReduce, 1 << 20, 1e-3, 2e-3, nullptr, 10.0);
  const double later = 10.0 + PathTrials::kRetrialSeconds / 2;
  CHECK(!trials.next(Collective::AllReduce, 1 << 20, later).trial);
  CHECK(trials.next(Collective::AllReduce, 1 << 20, later).choice == Choice::Staged);
  // The machine changed: the new trials find CMA faster, and it is kept from then on.
  const double retrial = 10.0 + PathTrials::kRetrialSeconds * 1.5;
  const std::string line =
      runTrials(trials, Collective::AllReduce, 1 << 20, 3e-3, 1e-3, nullptr, retrial);
  INFO(line);
  CHECK(line.find("CMA (median of 4 calls") != std::string::npos);
  CHECK(!trials.next(Collective::AllReduce, 1 << 20, retrial + 1).trial);
  CHECK(trials.next(Collective::AllReduce, 1 << 20, retrial + 1).choice == Choice::Cma);
}
