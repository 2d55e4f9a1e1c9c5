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

}  // namespace

PathTrials::Choice trialChoice(int k) {
  const int block = (k / PathTrials::kBlock) % 4;  // 0 1 2 3 -> S C C S
  return block == 1 || block == 2 ? PathTrials::Choice::Cma : PathTrials::Choice::Staged;
}

bool trialCounts(int k) {
  return k % PathTrials::kBlock != 0;
}

int PathTrials::sizeClass(uint64_t bytes) {
  return bytes == 0 ? 0 : static_cast<int>(std::bit_width(bytes)) - 1;
}

PathTrials::Step PathTrials::step(Collective c, uint64_t bytes, bool rootInPlace) {
  last_ = {static_cast<int>(c), rootInPlace, sizeClass(bytes)};
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
    case Stage::Hold:
      --cls.holdLeft;
      s.choice = cls.choice;
      break;
  }
  lastStep_ = s;
  return s;
}

void PathTrials::record(double seconds) {
  if (last_.collective < 0 || lastStep_.stage != Stage::Trial || !trialCounts(lastStep_.trial))
    return;
  Class& cls = classes_[last_];
  (lastStep_.choice == Choice::Cma ? cls.cma : cls.staged).push_back(seconds);
}

PathTrials::Medians PathTrials::medians() const {
  const auto it = classes_.find(last_);
  if (it == classes_.end()) return {};
  return {lowerMedian(it->second.staged), lowerMedian(it->second.cma)};
}

PathTrials::Decision PathTrials::decide(const std::vector<Medians>& ranks) const {
  Medians slowest;
  bool cmaTimed = !ranks.empty();
  for (const Medians& m : ranks) {
    slowest.staged = std::max(slowest.staged, m.staged);
    slowest.cma = std::max(slowest.cma, m.cma);
    cmaTimed &= m.cma > 0;
  }
  const double staged = slowest.staged, cma = slowest.cma;
  Decision d;
  d.choice = cmaTimed && (staged <= 0 || cma < staged) ? Choice::Cma : Choice::Staged;
  const bool viaCma = d.choice == Choice::Cma;
  const double call = viaCma ? cma : staged;
  const double calls = call > 0 ? kHoldSeconds / call : double(kMinHoldCalls);
  d.holdCalls =
      static_cast<uint32_t>(std::clamp(calls, double(kMinHoldCalls), double(kMaxHoldCalls)));
  d.line = fmt::format(
      "{}{} with blocks of {} B to twice that: {} (slowest of {} ranks' median {:.1f} us, {} "
      "{:.1f} us) for the next {} calls",
      collectiveName(static_cast<Collective>(last_.collective)),
      last_.rootInPlace ? " (root in place)" : "", uint64_t{1} << last_.sizeClass,
      viaCma ? "CMA" : "staged", ranks.size(), call * 1e6, viaCma ? "staged" : "CMA",
      (viaCma ? staged : cma) * 1e6, d.holdCalls);
  return d;
}

void PathTrials::hold(Choice choice, uint32_t holdCalls) {
  if (last_.collective < 0) return;
  Class& cls = classes_[last_];
  cls.stage = Stage::Hold;
  cls.choice = choice;
  cls.holdLeft = holdCalls;
  cls.staged.clear();
  cls.cma.clear();
}

}  // namespace weft
