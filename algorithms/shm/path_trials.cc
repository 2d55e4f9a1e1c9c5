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

PathTrials::Next PathTrials::next(Collective c, uint64_t bytes, double now) {
  const Key key{static_cast<int>(c), sizeClass(bytes)};
  Class& cls = classes_[key];
  if (cls.decided && now - cls.decidedAt > kRetrialSeconds) {
    cls.decided = false;
    cls.trials = 0;
    cls.staged.clear();
    cls.cma.clear();
  }
  if (cls.decided) {
    pending_ = {-1, -1};
    return {cls.choice, false};
  }
  pending_ = key;
  pendingAt_ = now;
  pendingChoice_ = trialChoice(cls.trials);
  return {pendingChoice_, true};
}

std::string PathTrials::record(double seconds) {
  if (pending_.first < 0) return {};
  Class& cls = classes_[pending_];
  const Key key = pending_;
  pending_ = {-1, -1};
  if (trialCounts(cls.trials))
    (pendingChoice_ == Choice::Cma ? cls.cma : cls.staged).push_back(seconds);
  if (++cls.trials < kTrials) return {};
  const double staged = lowerMedian(cls.staged), cma = lowerMedian(cls.cma);
  cls.decided = true;
  cls.decidedAt = pendingAt_;
  cls.choice = cma < staged ? Choice::Cma : Choice::Staged;
  return fmt::format(
      "{} with blocks of {} B to twice that: {} (median of {} calls {:.1f} us, {} "
      "{:.1f} us)",
      collectiveName(static_cast<Collective>(key.first)), uint64_t{1} << key.second,
      cls.choice == Choice::Cma ? "CMA" : "staged", cls.cma.size(),
      (cls.choice == Choice::Cma ? cma : staged) * 1e6,
      cls.choice == Choice::Cma ? "staged" : "CMA",
      (cls.choice == Choice::Cma ? staged : cma) * 1e6);
}

}  // namespace weft
