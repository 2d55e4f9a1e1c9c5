// Which way a collective between processes with private buffers reaches its peers, staging
// through the segment or copying through CMA, learned from the calls themselves.
//
// What a CMA copy costs against memcpy (cma_cost.hpp) does not predict which path is faster on
// every machine: on one 2-core AMD EPYC build machine a CMA copy cost 3.45 memcpys (the rule
// says stage) while a 2-rank allreduce through CMA took 0.54-0.56x the time of staging at 256
// KiB-2 MiB, and allgather 0.35x at 4 MiB; on another, at 2.8, staging won. So rank 0 times
// both: the first kTrials calls of each (collective, size class) run in blocks of kBlock calls
// with one path, staged, CMA, CMA, staged (the order evens out a drift). The first call of
// each block is not counted (it pays for the switch: caches, page faults on a larger output),
// and the path with the lower median time of the rest is kept for that class, for
// kRetrialSeconds: the machine changes under the ranks (on that AMD EPYC VM the staged 1 MiB
// allreduce took 58 us for a minute, then 120, while CMA stayed at 61-77), so each class runs
// its trials again after that long. Pure bookkeeping: the caller times the calls, passes the
// clock, and makes every rank follow rank 0's choice.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/schedule.hpp"

namespace weft {

class PathTrials {
 public:
  enum class Choice : uint8_t { Staged, Cma };
  // Trial calls per class: kBlocks blocks of kBlock calls, half of them with each path.
  static constexpr int kBlock = 3;
  static constexpr int kBlocks = 4;
  static constexpr int kTrials = kBlock * kBlocks;
  // How long a choice holds before its class is tried again.
  static constexpr double kRetrialSeconds = 5.0;

  // The path of the next call of collective `c` with `bytes` per block at time `now` (seconds,
  // any steady origin), and whether it is a trial: then record() must follow with its time
  // before the next call of any class.
  struct Next {
    Choice choice = Choice::Staged;
    bool trial = false;
  };
  Next next(Collective c, uint64_t bytes, double now);
  // The time of the trial next() announced last (not counted where it opens a block).
  // Returns a line saying what was decided once a class has had its trials (empty otherwise).
  std::string record(double seconds);
  // The trial next() announced last did not run its path (the call went another way): it is
  // neither counted nor timed.
  void cancel() { pending_ = {-1, -1}; }

  // The size class of `bytes`: the power of two at or below it (0 for 0).
  static int sizeClass(uint64_t bytes);

 private:
  struct Class {
    std::vector<double> staged, cma;  // trial times, seconds
    int trials = 0;
    bool decided = false;
    double decidedAt = 0;  // the `now` of the call that ended the trials
    Choice choice = Choice::Staged;
  };
  using Key = std::pair<int, int>;  // collective, size class
  std::map<Key, Class> classes_;
  Key pending_{-1, -1};
  Choice pendingChoice_ = Choice::Staged;
  double pendingAt_ = 0;
};

// The choice for trial k (0-based) of a class, block by block: S C C S.
PathTrials::Choice trialChoice(int k);
// Whether trial k's time counts: not where it opens a block.
bool trialCounts(int k);

}  // namespace weft
