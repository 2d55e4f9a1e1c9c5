// The tuning file (WEFT_TUNE_FILE): what calibration writes, the cost model reads back; a bad
// line is an error naming the file and the line.
#include "algorithms/cost/tune_file.hpp"

#include <catch2/catch.hpp>

#include "lib/base/error.hpp"

using namespace weft;

TEST_CASE("a tuning file sets the link classes and per-byte costs it names") {
  const MachineParams p = parseTuneFile(
      "# calibrated\nversion = 1\nshm.latency_us = 0.7\nshm.bandwidth_gbps = 9.5\n"
      "net.latency_us = 6 # over tcp\nreduce_gbps = 11\nreduce_gbps.bfloat16 = 3\n",
      "calib.txt");
  CHECK(p.shm.latencyUs == 0.7);
  CHECK(p.shm.bandwidthGBps == 9.5);
  CHECK(p.net.latencyUs == 6);
  CHECK(p.net.bandwidthGBps == MachineParams{}.net.bandwidthGBps);  // not named: the default
  CHECK(p.reduceRate(weftFloat32) == 11);
  CHECK(p.reduceRate(weftBfloat16) == 3);
  CHECK(p.source == "calib.txt");
}

TEST_CASE("a formatted tuning file parses back to the same parameters") {
  MachineParams p;
  p.ucx = {2.25, 4.5};
  p.copyGBps = 17;
  p.reduceGBpsByType[weftFloat16] = 5.5;
  const MachineParams q = parseTuneFile(formatTuneFile(p), "round-trip");
  CHECK(q.ucx.latencyUs == 2.25);
  CHECK(q.ucx.bandwidthGBps == 4.5);
  CHECK(q.copyGBps == 17);
  CHECK(q.reduceRate(weftFloat16) == 5.5);
}

TEST_CASE("bad tuning files are errors naming the file and line") {
  auto message = [](const char* text) -> std::string {
    try {
      parseTuneFile(text, "t.txt");
    } catch (const Error& e) {
      CHECK(e.result() == weftInvalidArgument);
      return e.what();
    }
    return "accepted";
  };
  CHECK_THAT(message("version = 1\nshm.latency = 3\n"),
             Catch::Contains("t.txt:2") && Catch::Contains("unknown key 'shm.latency'"));
  CHECK_THAT(message("version = 1\nnet.bandwidth_gbps = fast\n"), Catch::Contains("not a number"));
  CHECK_THAT(message("version = 1\nnet.bandwidth_gbps = 0\n"), Catch::Contains("positive"));
  CHECK_THAT(message("shm.latency_us = 1\n"), Catch::Contains("version"));
  CHECK_THAT(message("version = 2\n"), Catch::Contains("not supported"));
  CHECK_THROWS_WITH(loadTuneFile("/nonexistent/weft-tune-file"), Catch::Contains("cannot be read"));
}
