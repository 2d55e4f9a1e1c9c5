// Which way a collective between processes with private buffers reaches its peers, staging
// through the segment (its large pieces stored into the slots past the cache or through it) or
// copying through CMA, learned from the calls themselves.
//
// What a CMA copy costs against memcpy (cma_cost.hpp) does not predict which path is faster on
// every machine: on one 2-core AMD EPYC build machine a CMA copy cost 3.45 memcpys (the rule
// says stage) while a 2-rank allreduce through CMA took 0.54-0.56x the time of staging at 256
// KiB-2 MiB, and allgather 0.35x at 4 MiB; on another, at 2.8, staging won. Nor does one way
// of storing into the slots win everywhere. A staged rank with a core of its own streams large
// pieces into its slot (the peers last read those lines, and cached stores wait for each to be
// given up): on AMD EPYC VMs with 1 MiB of L2 per core that took 0.80-1.04x the time of
// cached stores (2 ranks, 256 KiB-16 MiB, the five movement collectives). On a Zen 4 VM
// cached stores took 0.59-0.91x the time of streaming for a 2-rank staged allreduce (256
// KiB-64 MiB) and 0.59-0.80x for allgather, alltoall and gather from 1 MiB, but 1.2-1.4x for
// those at 128-256 KiB and 1.1-2.4x for broadcast and scatter (perf/README.md, commit
// 1e2359d).
// So the ranks try all three:
// - trial: kTrials calls in blocks of kBlock with one path: staged, staged with cached stores,
//   CMA, CMA, cached, staged (the order evens out a drift); every rank times them from the
//   first rank's start of the call (callStartStamp, below), leaving out the first call of each
//   block (it pays for the switch: caches, page faults on a larger output);
// - decide: one call in which every rank publishes its median time per path, and all keep the
//   path whose slowest rank was fastest, for about kHoldSeconds of calls (timing rank 0 alone
//   misled: a broadcast root, or one of 4 ranks on 2 cores, is not the rank that waits longest);
// - probe, where the runner-up's slowest median is within kProbeMargin of the winner's: the
//   winner, then the runner-up, each for kProbeCalls calls, timed over the later half of each;
//   then a second decide from those times alone. A path can take many calls to settle after a
//   switch, CMA most: on the 2-core Intel Xeon VM of perf/README.md (4 ranks, 4 MiB
//   allreduce) CMA's calls were still getting faster 40 calls after a cold start, and its
//   trial medians (slowest rank) were 1778-1850 us where, held, it ran 1430-1570. The trials
//   chose cached stores (1680-1700 us held) in 2 of 5 launches; with probes CMA was kept in 4
//   of 5, and perf/compare's 4-rank allreduce took 0.81x, 0.75x and 0.93x the time at 1, 4 and
//   16 MiB (perf/README.md, "probes"). The winner goes first, so a benchmark that warms up
//   over the trials alone times the path it would have held. Of the 2 x kProbeCalls calls,
//   only the runner-up's can be slower, by about kProbeMargin at most as the trials timed it;
// - hold: that many calls on that path; then trials again. The machine changes under the
//   ranks (on that AMD EPYC VM the staged 1 MiB allreduce took 58 us for a minute, then 120,
//   while CMA stayed at 61-77).
// A broadcast whose root is in place is a class of its own: through CMA its root writes 1/n of
// every block instead of 1/(n + 1) besides copying its own (movement.cc), so the faster path can
// differ between the two forms of one size (2 ranks, 1 MiB: CMA 24 us in place, 47 out of
// place; staged 33-38 either way). So is a large allreduce whose first rank is in place: its
// output lines are the ones it has just read (4 ranks, 16 MiB: the out-of-place class chose
// staging, CMA took 0.67x the time in place; shm_collectives.hpp, kInPlaceClassBytes).
// In trial and hold calls every rank knows the path without asking, so a staged call costs no
// exchange. Pure bookkeeping: the caller times the calls and carries the medians between ranks.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "algorithms/schedule.hpp"

namespace weft {

class PathTrials {
 public:
  // Staged: large pieces go into the slots as each staged algorithm prefers (streamed where a
  // rank has a core); StagedCached: every store into the slots goes through the cache.
  enum class Choice : uint8_t { Staged, Cma, StagedCached };
  enum class Stage : uint8_t { Trial, Decide, Probe, Hold };
  static constexpr int kBlock = 3;
  static constexpr int kBlocks = 6;
  static constexpr int kTrials = kBlock * kBlocks;
  // Probes: how close the runner-up must be (its slowest median over the winner's), and how
  // many calls each of the two runs, the later half of them timed.
  static constexpr double kProbeMargin = 1.25;
  static constexpr int kProbeCalls = 2 * kTrials;
  // The most calls a class takes before its first held one: the trials, a decide call, both
  // probes and a second decide call. A benchmark that warms up this long times held calls.
  static constexpr int kTuningCalls = kTrials + 1 + 2 * kProbeCalls + 1;
  // How long, about, a decision holds before its class is tried again, and the fewest and most
  // calls that makes. The fewest keep the trials to a twentieth of the calls where calls are
  // long: with 100, a 2-rank 256 MiB allreduce (60 ms a call) tried every 6 s, and 250 calls
  // took 1.02x the time out of place and 1.10x in place against 360 (3 alternating runs,
  // medians; perf/README.md).
  static constexpr double kHoldSeconds = 5.0;
  static constexpr uint32_t kMinHoldCalls = 20 * kTrials;
  static constexpr uint32_t kMaxHoldCalls = 1u << 30;

  // What one call of a class is: a trial of `choice`, a decision, a probe of `choice`, or a
  // held `choice`.
  struct Step {
    Stage stage = Stage::Trial;
    Choice choice = Choice::Staged;  // (decide: the decision, once taken)
    int trial = 0;                   // trial, probe: which (0-based)
  };
  // Advances the class of collective `c` with `bytes` per block, in place or not (a class of
  // its own: the caller says when), by one call.
  Step step(Collective c, uint64_t bytes, bool inPlace = false);
  // After a trial or probe call that ran its path: its time in seconds. (A call that went
  // another way, such as buffers every rank maps, is not recorded: where no trial of a path
  // was, decide() keeps staging.)
  void record(double seconds);

  // In a decide call: this rank's lower median time per path over its counted trials (after
  // probes: over the probes' counted calls, the paths not probed 0), seconds (0: none).
  struct Medians {
    double staged = 0, cma = 0, cached = 0;
  };
  Medians medians() const;
  // The path whose slowest rank's median is lowest, given every rank's medians (the same answer
  // on every rank given the same list; a path some rank did not time is not chosen, except
  // staging where none was timed), the calls it holds for, and a line for the log. After the
  // trials, where the next fastest path timed on every rank is within kProbeMargin: probe
  // the two (`probe`, `runnerUp`) before holding either.
  struct Decision {
    Choice choice = Choice::Staged;
    uint32_t holdCalls = kMinHoldCalls;
    bool probe = false;
    Choice runnerUp = Choice::Staged;
    std::string line;
  };
  Decision decide(const std::vector<Medians>& ranks) const;
  // Every rank, in the decide call: the decision, whose `choice` this call follows too (a
  // probe's first path).
  void follow(const Decision& decision);
  // Holds `choice` for `holdCalls` calls from the next one (as follow() does without a probe).
  void hold(Choice choice, uint32_t holdCalls);

  // The size class of `bytes`: the power of two at or below it (0 for 0).
  static int sizeClass(uint64_t bytes);

 private:
  struct Class {
    Stage stage = Stage::Trial;
    int trials = 0;                   // trial calls so far
    std::vector<double> staged, cma, cached;  // this rank's counted trial (probe) times, seconds
    Choice choice = Choice::Staged;
    uint32_t holdLeft = 0;  // hold: calls still to come
    Choice probes[2] = {};  // the winner and the runner-up
    int probeCalls = 0;     // probe calls so far (a class tried again starts from none)
    // The probes have run: the next decision holds.
    bool probesDone() const { return probeCalls == 2 * kProbeCalls; }
    void clearTimes();
  };
  struct Key {
    int collective = -1;
    bool inPlace = false;
    int sizeClass = -1;
    auto operator<=>(const Key&) const = default;
  };
  std::map<Key, Class> classes_;
  Key last_;  // the class stepped last
  Step lastStep_;
};

// The choice for trial k (0-based) of a class, block by block: staged, cached, CMA, CMA,
// cached, staged.
PathTrials::Choice trialChoice(int k);
// Whether trial k's time counts: not where it opens a block.
bool trialCounts(int k);
// Whether probe call k's (0-based, over both probes) time counts: the later half of each.
bool probeCounts(int k);
// The choice's name in the log: "staged", "CMA", "staged with cached stores".
const char* choiceName(PathTrials::Choice choice);

// A trial is timed from the first rank's start of the call, not the timing rank's own. Ranks
// that share cores do not start a call together: one that the kernel runs late finds its
// peers' data ready and is done quickly, so its own time says little about the call, and a
// path whose ranks finish far apart looks faster than it is. 4 ranks on 2 cores, allgather of
// 256 KiB, 6 launches each way (perf/README.md, "trials timed from the first rank's start"):
// timed by each rank's own start, the slowest rank's median for staging with cached stores
// ranged over 23-77 us (from the first start: 50-77), and the trials chose it over CMA (31-69)
// in 2 launches of 6; from the first start, CMA in 5 of 6.
// So every rank publishes when it starts each call: the call's number (its low 16 bits) and
// the steady clock in nanoseconds (their low 48 bits, about 78 hours).
uint64_t callStartStamp(uint32_t call, int64_t ns);
// How many nanoseconds before `mine`, this rank's own stamp, the earliest of `stamps` that is
// of the same call began; 0 where none did. Stamps of other calls (a peer not yet in this one)
// do not count.
int64_t startedEarlierNs(std::span<const uint64_t> stamps, uint64_t mine);

}  // namespace weft
