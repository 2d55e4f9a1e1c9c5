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
  p.cores = 6;
  p.switchUs = 2.5;
  const MachineParams q = parseTuneFile(formatTuneFile(p), "round-trip");
  CHECK(q.cores == 6);
  CHECK(q.switchUs == 2.5);
  CHECK(parseTuneFile("version = 1\nhost.switch_us = 0\n", "zero").switchUs == 0);
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
  CHECK_THAT(message("version = 1\nhost.cores = -2\n"),
             Catch::Contains("t.txt:2") && Catch::Contains("not a number of cores"));
  // Hosts that share cores (the netns test bed) have a fraction of one each.
  CHECK(message("version = 1\nhost.cores = 0.5\n") == "accepted");
  CHECK(parseTuneFile("version = 1\nhost.cores = 0.5\n", "t.txt").cores == 0.5);
  CHECK_THAT(message("version = 2\n"), Catch::Contains("not supported"));
  CHECK_THROWS_WITH(loadTuneFile("/nonexistent/weft-tune-file"), Catch::Contains("cannot be read"));
}

TEST_CASE("size-dependent rates: points by size, read in log(bytes) between them") {
  const MachineParams p = parseTuneFile(
      "version = 1\nshm.bandwidth_gbps = 9\nshm.bandwidth_gbps@1048576 = 6\n"
      "shm.bandwidth_gbps@65536 = 30\nreduce_gbps = 8\nreduce_gbps@65536 = 40\n"
      "reduce_gbps@4194304 = 8\nreduce_gbps.bfloat16 = 2\ncopy_gbps@65536 = 50\n",
      "curves.txt");
  // Flat below the first point and above the last.
  CHECK(p.atSize(1024).shm.bandwidthGBps == 30);
  CHECK(p.atSize(uint64_t{1} << 30).shm.bandwidthGBps == 6);
  CHECK(p.atSize(uint64_t{1} << 20).shm.bandwidthGBps == 6);
  // 256 KiB is halfway from 64 KiB to 1 MiB in log(bytes).
  CHECK(p.atSize(uint64_t{256} << 10).shm.bandwidthGBps == Approx(18));
  // Without points, the one rate.
  CHECK(p.atSize(65536).ucx.bandwidthGBps == MachineParams{}.ucx.bandwidthGBps);
  // Other datatypes follow float32's curve, scaled by their own rate.
  const MachineParams small = p.atSize(65536);
  CHECK(small.reduceRate(weftFloat32) == 40);
  CHECK(small.reduceRate(weftBfloat16) == Approx(10));
  CHECK(p.atSize(uint64_t{64} << 20).reduceRate(weftBfloat16) == Approx(2));
  CHECK(small.copyGBps == 50);
  CHECK(small.bandwidthCurve[0].points.empty());  // read: no curves left
  // Written and read back point for point.
  const MachineParams q = parseTuneFile(formatTuneFile(p), "round-trip");
  CHECK(q.bandwidthCurve[0].points == p.bandwidthCurve[0].points);
  CHECK(q.reduceCurve.points == p.reduceCurve.points);
  CHECK(q.copyCurve.points == p.copyCurve.points);
}

TEST_CASE("a size on a key that has no curve, or a bad size, is an error") {
  auto message = [](const char* text) -> std::string {
    try {
      parseTuneFile(text, "c.txt");
    } catch (const Error& e) {
      return e.what();
    }
    return "accepted";
  };
  CHECK_THAT(message("version = 1\nshm.latency_us@65536 = 3\n"),
             Catch::Contains("c.txt:2") && Catch::Contains("take a size"));
  CHECK_THAT(message("version = 1\ncopy_gbps@64K = 3\n"), Catch::Contains("whole number"));
  CHECK_THAT(message("version = 1\ncopy_gbps@0 = 3\n"), Catch::Contains("whole number"));
  CHECK_THAT(message("version = 1\ncopy_gbps@4096 = 0\n"), Catch::Contains("positive"));
}
