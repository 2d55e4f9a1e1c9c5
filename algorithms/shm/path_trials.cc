#include "algorithms/shm/path_trials.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

namespace weft {
namespace {

// The lower median: of 4 times, the second smallest (one slow outlier does not count).
double lowerMedian(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[(v.size() - 1) / 2];
}

// callStartStamp: the call's number above the clock's nanoseconds.
constexpr int kStampNsBits = 48;
constexpr uint64_t kStampNsMask = (uint64_t{1} << kStampNsBits) - 1;

}  // namespace

PathTrials::Choice trialChoice(int k) {
  using C = PathTrials::Choice;
  static constexpr C kOrder[PathTrials::kBlocks] = {C::Staged, C::StagedCached, C::Cma,
                                                    C::Cma,    C::StagedCached, C::Staged};
  return kOrder[(k / PathTrials::kBlock) % PathTrials::kBlocks];
}

bool trialCounts(int k) {
  return k % PathTrials::kBlock != 0;
}

bool probeCounts(int k) {
  return k % PathTrials::kProbeCalls >= PathTrials::kProbeCalls / 2;
}

const char* choiceName(PathTrials::Choice choice) {
  switch (choice) {
    case PathTrials::Choice::Staged: return "staged";
    case PathTrials::Choice::Cma: return "CMA";
    case PathTrials::Choice::StagedCached: return "staged with cached stores";
  }
  return "?";
}

uint64_t callStartStamp(uint32_t call, int64_t ns) {
  return (uint64_t{call & 0xffffu} << kStampNsBits) | (static_cast<uint64_t>(ns) & kStampNsMask);
}

int64_t startedEarlierNs(std::span<const uint64_t> stamps, uint64_t mine) {
  uint64_t earliest = 0;
  for (const uint64_t s : stamps) {
    if (s >> kStampNsBits != mine >> kStampNsBits) continue;
    // Modulo 2^48: a stamp up to half of that before mine is earlier, the rest later.
    const uint64_t before = (mine - s) & kStampNsMask;
    if (before < (uint64_t{1} << (kStampNsBits - 1))) earliest = std::max(earliest, before);
  }
  return static_cast<int64_t>(earliest);
}

int PathTrials::sizeClass(uint64_t bytes) {
  return bytes == 0 ? 0 : static_cast<int>(std::bit_width(bytes)) - 1;
}

PathTrials::Step PathTrials::step(Collective c, uint64_t bytes, bool inPlace) {
  last_ = {static_cast<int>(c), inPlace, sizeClass(bytes)};
  Class& cls = classes_[last_];
  if (cls.stage == Stage::Hold && cls.holdLeft == 0) {
    cls = Class{};  // tried again
  }
  Step s;
  s.stage = cls.stage;
  switch (cls.stage) {
    case Stage::Trial:
      s.trial = cls.trials++;
      s.choice = trialChoice(s.trial);
      if (cls.trials == kTrials) cls.stage = Stage::Decide;
      break;
    case Stage::Decide: break;
    case Stage::Probe:
      s.trial = cls.probeCalls++;
      s.choice = cls.probes[s.trial / kProbeCalls];
      if (cls.probeCalls == 2 * kProbeCalls) cls.stage = Stage::Decide;
      break;
    case Stage::Hold:
      --cls.holdLeft;
      s.choice = cls.choice;
      break;
  }
  lastStep_ = s;
  return s;
}

void PathTrials::record(double seconds) {
  if (last_.collective < 0) return;
  const bool counts = lastStep_.stage == Stage::Trial   ? trialCounts(lastStep_.trial)
                      : lastStep_.stage == Stage::Probe ? probeCounts(lastStep_.trial)
                                                        : false;
  if (!counts) return;
  Class& cls = classes_[last_];
  switch (lastStep_.choice) {
    case Choice::Staged: cls.staged.push_back(seconds); break;
    case Choice::Cma: cls.cma.push_back(seconds); break;
    case Choice::StagedCached: cls.cached.push_back(seconds); break;
  }
}

PathTrials::Medians PathTrials::medians() const {
  const auto it = classes_.find(last_);
  if (it == classes_.end()) return {};
  const Class& cls = it->second;
  return {lowerMedian(cls.staged), lowerMedian(cls.cma), lowerMedian(cls.cached)};
}

PathTrials::Decision PathTrials::decide(const std::vector<Medians>& ranks) const {
  const auto it = classes_.find(last_);
  const bool probed = it != classes_.end() && it->second.probesDone();
  Medians slowest;
  bool cmaTimed = !ranks.empty(), cachedTimed = !ranks.empty();
  for (const Medians& m : ranks) {
    slowest.staged = std::max(slowest.staged, m.staged);
    slowest.cma = std::max(slowest.cma, m.cma);
    slowest.cached = std::max(slowest.cached, m.cached);
    cmaTimed &= m.cma > 0;
    cachedTimed &= m.cached > 0;
  }
  // Staging unless another path was timed on every rank and is faster; ties keep the earlier.
  struct Option {
    Choice choice;
    double seconds;
    bool timed;
  };
  const Option options[] = {{Choice::Staged, slowest.staged, slowest.staged > 0},
                            {Choice::StagedCached, slowest.cached, cachedTimed},
                            {Choice::Cma, slowest.cma, cmaTimed}};
  Option best = options[0];
  for (const Option& o : options)
    if (o.timed && (!best.timed || o.seconds < best.seconds)) best = o;
  // The next fastest of the paths every rank timed.
  const Option* next = nullptr;
  for (const Option& o : options)
    if (o.timed && o.choice != best.choice && (!next || o.seconds < next->seconds)) next = &o;
  Decision d;
  d.choice = best.choice;
  d.probe = !probed && best.timed && next && next->seconds <= best.seconds * kProbeMargin;
  if (d.probe) d.runnerUp = next->choice;
  const double calls = best.seconds > 0 ? kHoldSeconds / best.seconds : double(kMinHoldCalls);
  d.holdCalls =
      static_cast<uint32_t>(std::clamp(calls, double(kMinHoldCalls), double(kMaxHoldCalls)));
  const Collective c = static_cast<Collective>(last_.collective);
  const std::string what = fmt::format("{}{} with blocks of {} B to twice that", collectiveName(c),
                                       !last_.inPlace               ? ""
                                       : c == Collective::Broadcast ? " (root in place)"
                                                                    : " (in place)",
                                       uint64_t{1} << last_.sizeClass);
  auto us = [](double seconds) {
    return seconds > 0 ? fmt::format("{:.1f} us", seconds * 1e6) : std::string("-");
  };
  const std::string times =
      fmt::format("slowest of {} ranks' medians{}: staged {}, staged with cached stores {}, CMA {}",
                  ranks.size(), probed ? " over the probes" : "", us(slowest.staged),
                  us(slowest.cached), us(slowest.cma));
  // (The form of the line without probes, up to the times, so that a reader of the log finds
  // the winner the same way in both.)
  if (d.probe)
    d.line =
        fmt::format("{}: {} ({}); {} within {:.2f}x: each probed for {} calls first", what,
                    choiceName(d.choice), times, choiceName(d.runnerUp), kProbeMargin, kProbeCalls);
  else
    d.line = fmt::format("{}: {} ({}) for the next {} calls", what, choiceName(d.choice), times,
                         d.holdCalls);
  return d;
}

void PathTrials::Class::clearTimes() {
  staged.clear();
  cma.clear();
  cached.clear();
}

void PathTrials::follow(const Decision& decision) {
  if (!decision.probe) return hold(decision.choice, decision.holdCalls);
  if (last_.collective < 0) return;
  Class& cls = classes_[last_];
  cls.stage = Stage::Probe;
  cls.probes[0] = decision.choice;
  cls.probes[1] = decision.runnerUp;
  cls.clearTimes();
}

void PathTrials::hold(Choice choice, uint32_t holdCalls) {
  if (last_.collective < 0) return;
  Class& cls = classes_[last_];
  cls.stage = Stage::Hold;
  cls.choice = choice;
  cls.holdLeft = holdCalls;
  cls.clearTimes();
}

}  // namespace weft
