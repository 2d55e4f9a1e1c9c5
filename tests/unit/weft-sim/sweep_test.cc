// weft-sim's numbers are the cost model's: every algorithm's time equals a direct replay of its
// schedules with the same chunk size and channels, the pick is the cheapest, and the sizes and
// bus bandwidth factors follow nccl-tests.
#include "sweep.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "algorithms/cost/simulator.hpp"

using namespace weft;
using namespace weft::sim;

TEST_CASE("weft-sim prices every algorithm as a direct replay does, and picks the cheapest") {
  Options o = parseOptions({"--ranks", "24", "--ranks-per-host", "4", "--reduce", "10", "--copy",
                            "20", "all_reduce", "-b", "1K", "-e", "4M", "-f", "64"});
  const std::vector<SizeResult> results = simulateSweep(o);
  REQUIRE(results.size() == 3);  // 1K, 64K, 4M
  std::vector<int> hosts;  // the cost model's layout: rank q on host q / ranksPerHost
  for (int q = 0; q < 24; ++q) hosts.push_back(q / 4);
  for (const SizeResult& r : results) {
    MachineModel m;
    m.nranks = 24;
    m.ranksPerHost = 4;
    m.intra = o.intra;
    m.intraCopiedByReceiver = true;  // the default link class inside a host: weft's shm
    m.inter = o.inter;
    m.reduceGBps = 10;
    m.copyGBps = 20;
    double cheapest = 1e30;
    for (const Candidate& c : r.priced) {
      CollectiveShape s;
      s.collective = Collective::AllReduce;
      s.nranks = 24;
      s.count = r.count;
      s.elemSize = 4;
      s.chunkBytes = c.chunkBytes;
      s.channels = c.channels;
      s.hostOfRank = hosts;
      INFO(c.algorithm->name << " at " << r.bytes << " B");
      CHECK(c.seconds == Approx(simulate(*c.algorithm, s, m).seconds).epsilon(1e-12));
      cheapest = std::min(cheapest, c.seconds);
    }
    REQUIRE(r.pick.algorithm != nullptr);
    CHECK(r.pick.predictedSeconds == Approx(cheapest).epsilon(1e-12));
  }
}

TEST_CASE("weft-sim's sizes and bus bandwidth factors follow nccl-tests") {
  Options o = parseOptions({"all_gather", "-b", "8", "-e", "1G", "-f", "4"});
  const std::vector<uint64_t> sizes = sweepSizes(o);
  REQUIRE(sizes.size() == 14);  // 8 * 4^k up to 512M
  CHECK(sizes.back() == uint64_t{512} << 20);
  CHECK(busBandwidthFactor(Collective::AllReduce, 8) == Approx(2.0 * 7 / 8));
  CHECK(busBandwidthFactor(Collective::AllGather, 8) == Approx(7.0 / 8));
  CHECK(busBandwidthFactor(Collective::Broadcast, 8) == 1);
}

TEST_CASE("with a tuning file, weft-sim prices the link class and cores it is given") {
  const std::string path = "weft-sim-sweep-test-" + std::to_string(::getpid()) + ".tune";
  {
    std::ofstream f(path);
    f << "version = 1\nshm.latency_us = 1\nshm.bandwidth_gbps = 4\nucx.latency_us = 1\n"
         "ucx.bandwidth_gbps = 1\nreduce_gbps = 100\ncopy_gbps = 100\nhost.cores = 2\n";
  }
  auto ringSeconds = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"--ranks", "4", "--tune-file", path, "--algo", "allreduce:ring",
                                  "all_reduce", "-b", "16M", "-e", "16M"};
    args.insert(args.end(), extra.begin(), extra.end());
    const std::vector<SizeResult> results = simulateSweep(parseOptions(args));
    REQUIRE(results.size() == 1);
    REQUIRE(results[0].pick.algorithm != nullptr);
    return results[0].pick.predictedSeconds;
  };
  const double shm = ringSeconds({});
  const double ucx = ringSeconds({"--transport", "ucx"});
  const double shmCoreEach = ringSeconds({"--cores", "4"});
  // A ring allreduce moves 2(p-1)/p of the buffer over each rank's link: 24 MiB here.
  const double bytes = 2.0 * 3 / 4 * (16 << 20);
  CHECK(shm > bytes / 4e9);
  CHECK(ucx > bytes / 1e9);
  CHECK(ucx > 3 * shm);
  // 4 ranks on 2 cores: everything inside the host runs at half speed.
  CHECK(shm == Approx(2 * shmCoreEach).epsilon(0.05));
  std::remove(path.c_str());
}
