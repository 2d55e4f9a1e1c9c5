// Which CPU each rank is bound to (--bind-to).
#pragma once

#include <vector>

#include "lib/base/cpus.hpp"  // allowedCpus()
#include "tools/weftrun/options.hpp"

namespace weft::run {

// One CPU per rank (rank i gets allowed[i % size]) for Core; none (the ranks keep weftrun's
// mask) for None.
std::vector<int> rankCpus(Binding binding, int nranks, const std::vector<int>& allowed);

}  // namespace weft::run
