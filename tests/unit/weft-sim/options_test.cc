// weft-sim's command line: links, sizes and the collective parse as written in the issue, and
// bad usage is a UsageError naming the problem (main exits 2 on it).
#include "options.hpp"

#include <catch2/catch.hpp>

using namespace weft;
using namespace weft::sim;

TEST_CASE("weft-sim parses the issue's command line") {
  const Options o = parseOptions({"--ranks", "4096", "--ranks-per-host", "8", "--intra",
                                  "lat=1us,bw=200GB/s", "--inter", "lat=5us,bw=25GB/s",
                                  "all_reduce", "-b", "8", "-e", "1G", "-f", "4"});
  CHECK(o.ranks == 4096);
  CHECK(o.ranksPerHost == 8);
  CHECK(o.intra.latencyUs == 1);
  CHECK(o.intra.bandwidthGBps == 200);
  CHECK(o.inter.latencyUs == 5);
  CHECK(o.inter.bandwidthGBps == 25);
  CHECK(o.collective == Collective::AllReduce);
  CHECK(o.minBytes == 8);
  CHECK(o.maxBytes == uint64_t{1} << 30);
  CHECK(o.stepFactor == 4);
  CHECK_FALSE(o.json);
  CHECK(o.transport == "shm");  // several hosts: shm inside each, as weft runs them
  CHECK(o.cores == -1);
}

TEST_CASE("weft-sim's link class inside a host follows weft's transport unless given") {
  CHECK(parseOptions({"--ranks", "4", "all_reduce"}).transport == "shm");
  CHECK(parseOptions({"--ranks", "4", "--transport", "ucx", "all_reduce"}).transport == "ucx");
  CHECK(parseOptions({"--ranks", "4", "--cores", "2", "all_reduce"}).cores == 2);
  CHECK_THROWS_WITH(parseOptions({"--transport", "tcp", "all_reduce"}),
                    Catch::Contains("expected shm or ucx"));
}

TEST_CASE("link units convert to microseconds and GB/s") {
  CHECK(parseLink("--inter", "lat=500ns,bw=100Gbit/s").latencyUs == Approx(0.5));
  CHECK(parseLink("--inter", "lat=500ns,bw=100Gbit/s").bandwidthGBps == Approx(12.5));
  CHECK(parseLink("--inter", "bw=800MB/s,lat=2ms").latencyUs == Approx(2000));
  CHECK(parseLink("--inter", "bw=800MB/s,lat=2ms").bandwidthGBps == Approx(0.8));
  CHECK(parseSize("-b", "64K") == 65536);
  CHECK(parseSize("-b", "3M") == 3 * 1048576);
}

TEST_CASE("bad weft-sim usage is an error naming the problem") {
  using V = std::vector<std::string>;
  CHECK_THROWS_WITH(parseOptions(V{"--ranks", "8"}), Catch::Contains("no collective"));
  CHECK_THROWS_WITH(parseOptions(V{"allreduse"}), Catch::Contains("'allreduse'"));
  CHECK_THROWS_WITH(parseOptions(V{"all_reduce", "--inter", "lat=5us"}),
                    Catch::Contains("--inter"));
  CHECK_THROWS_WITH(parseOptions(V{"all_reduce", "--intra", "lat=5parsecs,bw=1GB/s"}),
                    Catch::Contains("latency unit"));
  CHECK_THROWS_WITH(parseOptions(V{"all_reduce", "--intra", "lat=5us,bw=1GB"}),
                    Catch::Contains("bandwidth"));
  CHECK_THROWS_WITH(parseOptions(V{"all_reduce", "-b", "2M", "-e", "1M"}),
                    Catch::Contains("below"));
  CHECK_THROWS_WITH(parseOptions(V{"all_reduce", "-f", "1"}), Catch::Contains("above 1"));
  CHECK_THROWS_WITH(parseOptions(V{"all_reduce", "-d", "float7"}), Catch::Contains("'float7'"));
  CHECK_THROWS_WITH(parseOptions(V{"all_reduce", "--ranks"}), Catch::Contains("needs a value"));
  CHECK_THROWS_WITH(parseOptions(V{"all_reduce", "broadcast"}), Catch::Contains("'broadcast'"));
  CHECK_THROWS_AS(parseOptions(V{"all_reduce", "--algo", "allreduce:chain"}), UsageError);
}
