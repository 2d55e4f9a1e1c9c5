// What rank 0 prints (nccl-tests' layout) and writes as JSON. Pure: strings in, strings out.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "options.hpp"

namespace weft::perf {

struct RankInfo {
  int rank = 0;
  int pid = 0;
  std::string host;
};

struct RunInfo {
  Options options;
  int nranks = 1;
  int threads = 1;  // ranks per process (the -t threads, or 1 under a launcher)
  int version = 0;  // weftGetVersion
  std::vector<RankInfo> ranks;
};

struct ModeResult {
  double timeUs = 0;
  double algbw = 0;    // GB/s
  double busbw = 0;    // GB/s
  int64_t wrong = -1;  // elements wrong over all ranks; -1: not verified (-c 0)
  bool ran = true;     // false: the mode does not exist (in-place sendrecv); columns are N/A
};

struct Row {
  uint64_t bytes = 0;
  uint64_t count = 0;
  std::string type;
  std::string redop;  // "none" for collectives that do not reduce
  int root = -1;      // -1 for collectives without a root
  ModeResult outOfPlace, inPlace;
  // --baseline: the peer's time for the out-of-place call (us), alternated with weft's on the
  // same buffers; negative when the peer has no such datatype or operator.
  bool baseline = false;
  double baselineUs = -1;
};

// Parameters, one line per rank, and the two column header lines.
std::string formatHeader(const RunInfo& run);
std::string formatRow(const Row& row);
// The mean of busbw over every mode that ran, out-of-place and in-place alike (0 if none).
double averageBusBandwidth(const std::vector<Row>& rows);
// wrong: every wrong element of every row, summed.
std::string formatFooter(uint64_t wrong, double avgBusBw);
std::string formatJson(const RunInfo& run, const std::vector<Row>& rows, uint64_t wrong,
                       double avgBusBw);

}  // namespace weft::perf
