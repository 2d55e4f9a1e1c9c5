// Schedules are pure functions of (algorithm, shape): a communicator builds each once and keeps
// it. Not thread-safe: a communicator's operations run one at a time.
#pragma once

#include <map>
#include <memory>
#include <tuple>

#include "algorithms/algorithm.hpp"

namespace weft {

class ScheduleCache {
 public:
  // Shared so that a schedule in use survives the cache being reset.
  std::shared_ptr<const Schedule> get(const Algorithm& algorithm, const CollectiveShape& s) {
    const Key key{algorithm.id, s.collective, s.nranks,  s.rank,       s.count,
                  s.elemSize,   s.root,       s.inPlace, s.chunkBytes, s.channels};
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    if (cache_.size() >= kCapacity) cache_.clear();  // plain reset: shapes rarely churn
    auto built = std::make_shared<const Schedule>(buildSchedule(algorithm, s));
    cache_.emplace(key, built);
    return built;
  }
  size_t size() const { return cache_.size(); }

 private:
  static constexpr size_t kCapacity = 512;
  using Key =
      std::tuple<AlgorithmId, Collective, int, int, uint64_t, uint32_t, int, bool, uint64_t, int>;
  std::map<Key, std::shared_ptr<const Schedule>> cache_;
};

}  // namespace weft
