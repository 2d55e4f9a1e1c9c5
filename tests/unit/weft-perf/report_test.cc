#include "tools/weft-perf/report.hpp"

#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

using namespace weft::perf;

namespace {

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The column where each whitespace-separated token of a line ends.
std::vector<size_t> tokenEnds(const std::string& line) {
  std::vector<size_t> ends;
  for (size_t i = 0; i < line.size(); ++i)
    if (line[i] != ' ' && (i + 1 == line.size() || line[i + 1] == ' ')) ends.push_back(i + 1);
  return ends;
}

Row sampleRow() {
  Row row;
  row.bytes = 1048576;
  row.count = 262144;
  row.type = "float";
  row.redop = "sum";
  row.root = -1;
  row.outOfPlace = {123.456, 8.49, 12.74, 0};
  row.inPlace = {98.7, 10.62, 15.93, 3};
  return row;
}

RunInfo sampleRun() {
  RunInfo run;
  run.options.collective = Collective::AllReduce;
  run.options.minBytes = 8;
  run.options.maxBytes = 64 << 20;
  run.options.stepFactor = 4;
  run.nranks = 2;
  run.threads = 2;
  run.version = 100;
  run.ranks = {{0, 4242, "node\"a"}, {1, 4242, "node\"a"}};
  return run;
}

}  // namespace

TEST_CASE("a row prints in nccl-tests' columns") {
  CHECK(formatRow(sampleRow()) ==
        "     1048576        262144     float     sum      -1   123.46    8.49   12.74      0"
        "    98.70   10.62   15.93      3\n");
  Row unchecked = sampleRow();
  unchecked.outOfPlace.wrong = unchecked.inPlace.wrong = -1;
  unchecked.outOfPlace.timeUs = 123456.7;  // wide times lose decimals, not alignment
  unchecked.inPlace.timeUs = 12345.67;
  CHECK(formatRow(unchecked) ==
        "     1048576        262144     float     sum      -1   123457    8.49   12.74    N/A"
        "  12345.7   10.62   15.93    N/A\n");
}

TEST_CASE("the header names the parameters, every rank, and columns aligned with the rows") {
  const std::vector<std::string> h = lines(formatHeader(sampleRun()));
  REQUIRE(h.size() == 10);
  CHECK(h[0] == "# Collective test starting: all_reduce (weft-perf, weft 0.1.0)");
  CHECK(h[1] ==
        "# nThread 2 nGpus 1 minBytes 8 maxBytes 67108864 step: 4(factor) warmup iters: 1 iters: "
        "20 agg iters: 1 validation: 1 graph: 0");
  CHECK(h[3] == "# Using devices");
  CHECK(h[4] == "#  Rank  0 Group  0 Pid   4242 on     node\"a device  0 [cpu]");
  CHECK(h[5] == "#  Rank  1 Group  0 Pid   4242 on     node\"a device  1 [cpu]");
  // Every column name ends where the row's value ends.
  const std::vector<size_t> names = tokenEnds(h[8]);
  const std::vector<size_t> values = tokenEnds(lines(formatRow(sampleRow()))[0]);
  REQUIRE(names.size() == 14);  // "#" then 13 names
  REQUIRE(values.size() == 13);
  for (size_t k = 0; k < 13; ++k) CHECK(names[k + 1] == values[k]);
  CHECK(h[8].find("#       size         count      type   redop    root     time   algbw   busbw "
                  "#wrong") == 0);

  RunInfo blocking = sampleRun();
  blocking.options.blocking = true;
  blocking.options.stepBytes = 1024;
  const std::string b = formatHeader(blocking);
  CHECK(b.find("step: 1024(bytes)") != std::string::npos);
  CHECK(b.find("# Blocking Enabled") != std::string::npos);
}

TEST_CASE("the header says when the timed calls can include weft's path trials") {
  const auto note = [](const RunInfo& run) {
    return formatHeader(run).find(
               "# Path trials: ranks that are processes try ways of reaching "
               "each other on the first 92 calls of a size") != std::string::npos;
  };
  RunInfo processes = sampleRun();
  processes.threads = 1;  // two processes of one rank each, as under a launcher
  CHECK(note(processes));
  CHECK(formatHeader(processes).find("-w 92 leaves them out\n") != std::string::npos);
  // Warm-up and verified calls together covering the trials: no note.
  processes.options.warmupIters = 91;
  CHECK_FALSE(note(processes));
  processes.options.warmupIters = 90;
  CHECK(note(processes));
  processes.options.checkIters = 0;
  processes.options.warmupIters = 92;
  CHECK_FALSE(note(processes));
  // Ranks as threads, one rank, and weftMemAlloc buffers do not try paths.
  CHECK_FALSE(note(sampleRun()));
  RunInfo one = sampleRun();
  one.threads = one.nranks = 1;
  CHECK_FALSE(note(one));
  RunInfo registered = sampleRun();
  registered.threads = 1;
  registered.options.registered = true;
  CHECK_FALSE(note(registered));
}

TEST_CASE("the footer: wrong values and the mean bus bandwidth of both modes") {
  const std::vector<Row> rows = {sampleRow(), sampleRow()};
  CHECK(averageBusBandwidth(rows) == Approx((12.74 + 15.93) / 2));
  CHECK(averageBusBandwidth({}) == 0);
  CHECK(formatFooter(0, 14.335) ==
        "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 14.335 \n#\n");
  CHECK(formatFooter(7, 1.5).find("# Out of bounds values : 7 FAILED\n") == 0);
}

TEST_CASE("JSON holds the parameters and one object per row, strings escaped") {
  Row unchecked = sampleRow();
  unchecked.inPlace.wrong = -1;
  const std::string j = formatJson(sampleRun(), {sampleRow(), unchecked}, 3, 14.335);
  CHECK(j.find("\"collective\": \"all_reduce\"") != std::string::npos);
  CHECK(j.find("\"min_bytes\": 8, \"max_bytes\": 67108864, \"step_factor\": 4, \"step_bytes\": "
               "null") != std::string::npos);
  CHECK(j.find("\"host\": \"node\\\"a\"") != std::string::npos);
  CHECK(j.find("{\"size\": 1048576, \"count\": 262144, \"type\": \"float\", \"redop\": \"sum\", "
               "\"root\": -1, \"out_of_place\": {\"time_us\": 123.456, \"algbw_gbps\": 8.49, "
               "\"busbw_gbps\": 12.74, \"wrong\": 0}, \"in_place\": {\"time_us\": 98.7, ") !=
        std::string::npos);
  CHECK(j.find("\"wrong\": null}") != std::string::npos);
  CHECK(j.find("\"wrong\": 3,\n  \"avg_busbw_gbps\": 14.335\n}") != std::string::npos);
  int depth = 0, minDepth = 0;
  bool inString = false;
  for (size_t i = 0; i < j.size(); ++i) {
    if (inString) {
      if (j[i] == '\\')
        ++i;
      else if (j[i] == '"')
        inString = false;
      continue;
    }
    if (j[i] == '"') inString = true;
    if (j[i] == '{' || j[i] == '[') ++depth;
    if (j[i] == '}' || j[i] == ']') minDepth = std::min(minDepth, --depth);
  }
  CHECK(depth == 0);
  CHECK(minDepth == 0);
}

TEST_CASE("a mode that does not exist prints N/A, is null in JSON and not averaged") {
  Row row = sampleRow();
  row.inPlace.ran = false;
  CHECK(formatRow(row) ==
        "     1048576        262144     float     sum      -1   123.46    8.49   12.74      0"
        "      N/A     N/A     N/A    N/A\n");
  CHECK(averageBusBandwidth({row}) == Approx(12.74));
  CHECK_THAT(formatJson(sampleRun(), {row}, 0, 12.74), Catch::Contains("\"in_place\": null"));
}
