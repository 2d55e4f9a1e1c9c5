// The median of a sample of timings (for an even count, the mean of the two middle ones). The
// sample must not be empty.
#pragma once

#include <algorithm>
#include <vector>

namespace weft::perf {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace weft::perf
