// weft-sim's output: weft-perf's table layout (a '#' header, one row per size: size, count,
// type, redop, root, then every algorithm's predicted time and bus bandwidth, then the
// tuner's pick), or JSON (-J).
#pragma once

#include <string>
#include <vector>

#include "options.hpp"
#include "sweep.hpp"

namespace weft::sim {

std::string formatTable(const Options& options, const std::vector<SizeResult>& results);
std::string formatJson(const Options& options, const std::vector<SizeResult>& results);

}  // namespace weft::sim
