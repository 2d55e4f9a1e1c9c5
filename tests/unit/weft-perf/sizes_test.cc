#include "tools/weft-perf/sizes.hpp"

#include <catch2/catch.hpp>
#include <vector>

using namespace weft::perf;

namespace {

Options sweep(uint64_t minBytes, uint64_t maxBytes, uint64_t factor, uint64_t step) {
  Options o;
  o.minBytes = minBytes;
  o.maxBytes = maxBytes;
  o.stepFactor = factor;
  o.stepBytes = step;
  return o;
}

using Sizes = std::vector<uint64_t>;

}  // namespace

TEST_CASE("the factor multiplies from the minimum while the size stays within the maximum") {
  CHECK(sweepSizes(sweep(8, 1 << 20, 8, 0)) == Sizes{8, 64, 512, 4096, 32768, 262144});
  CHECK(sweepSizes(sweep(8, 64, 2, 0)) == Sizes{8, 16, 32, 64});
  CHECK(sweepSizes(sweep(8, 63, 2, 0)) == Sizes{8, 16, 32});
  CHECK(sweepSizes(sweep(100, 100, 2, 0)) == Sizes{100});
  CHECK(sweepSizes(sweep(3, 100, 3, 0)) == Sizes{3, 9, 27, 81});
  // 0 is followed by 1 (multiplying 0 would never end).
  CHECK(sweepSizes(sweep(0, 4, 2, 0)) == Sizes{0, 1, 2, 4});
  // No overflow past 2^64.
  const uint64_t top = uint64_t{1} << 63;
  CHECK(sweepSizes(sweep(top, ~uint64_t{0}, 2, 0)) == Sizes{top});
}

TEST_CASE("an increment adds a fixed number of bytes instead") {
  CHECK(sweepSizes(sweep(100, 400, 2, 100)) == Sizes{100, 200, 300, 400});
  CHECK(sweepSizes(sweep(0, 10, 2, 4)) == Sizes{0, 4, 8});
  CHECK(sweepSizes(sweep(~uint64_t{0} - 1, ~uint64_t{0}, 2, 5)) == Sizes{~uint64_t{0} - 1});
}

TEST_CASE("whole-buffer collectives: count = size / typesize, nothing split") {
  for (Collective c :
       {Collective::AllReduce, Collective::Broadcast, Collective::Reduce, Collective::SendRecv}) {
    INFO(collectiveName(c));
    const Layout l = layoutFor(c, 1001, 4, 3);  // rounds down to a whole float
    CHECK(l.count == 250);
    CHECK(l.sendCount == 250);
    CHECK(l.recvCount == 250);
    CHECK(l.bytes == 1000);
    CHECK(l.sendInPlaceOffset == 0);
    CHECK(l.recvInPlaceOffset == 0);
    CHECK(l.inPlaceCount() == 250);
    CHECK(layoutFor(c, 7, 8, 2).bytes == 0);
    CHECK(layoutFor(c, 8, 8, 5).count == 1);  // not split: 5 ranks do not matter
  }
}

TEST_CASE("split collectives: the size is the whole buffer, a multiple of typesize * nranks") {
  // 1000 B of float over 3 ranks: 250 elements, 83 per rank, 249 in all = 996 B.
  const Layout ag = layoutFor(Collective::AllGather, 1000, 4, 3);
  CHECK(ag.count == 83);
  CHECK(ag.sendCount == 83);
  CHECK(ag.recvCount == 249);
  CHECK(ag.bytes == 996);
  CHECK(ag.sendInPlaceOffset == 83);
  CHECK(ag.recvInPlaceOffset == 0);
  CHECK(ag.inPlaceCount() == 249);

  const Layout ga = layoutFor(Collective::Gather, 1000, 4, 3);
  CHECK(ga.count == 83);
  CHECK(ga.sendCount == 83);
  CHECK(ga.recvCount == 249);
  CHECK(ga.bytes == 996);
  CHECK(ga.sendInPlaceOffset == 83);

  const Layout rs = layoutFor(Collective::ReduceScatter, 1000, 4, 3);
  CHECK(rs.count == 83);
  CHECK(rs.sendCount == 249);
  CHECK(rs.recvCount == 83);
  CHECK(rs.bytes == 996);
  CHECK(rs.sendInPlaceOffset == 0);
  CHECK(rs.recvInPlaceOffset == 83);

  const Layout sc = layoutFor(Collective::Scatter, 1000, 4, 3);
  CHECK(sc.count == 83);
  CHECK(sc.sendCount == 249);
  CHECK(sc.recvCount == 83);
  CHECK(sc.recvInPlaceOffset == 83);

  const Layout a2a = layoutFor(Collective::AlltoAll, 1000, 4, 3);
  CHECK(a2a.count == 83);
  CHECK(a2a.sendCount == 249);
  CHECK(a2a.recvCount == 249);
  CHECK(a2a.bytes == 996);
  CHECK(a2a.sendInPlaceOffset == 0);
  CHECK(a2a.recvInPlaceOffset == 0);

  // Fewer elements than ranks: an empty row, as nccl-tests prints it.
  const Layout tiny = layoutFor(Collective::AllGather, 8, 8, 3);
  CHECK(tiny.count == 0);
  CHECK(tiny.bytes == 0);
  // One rank: nothing is lost.
  CHECK(layoutFor(Collective::AlltoAll, 1 << 20, 2, 1).bytes == 1 << 20);
  // 8 B of int8 over 3 ranks: 2 per rank, 6 B.
  CHECK(layoutFor(Collective::ReduceScatter, 8, 1, 3).bytes == 6);
}

TEST_CASE("bus bandwidth factors of every collective for 1..8 ranks") {
  // Written out by hand: 2(n-1)/n, (n-1)/n and 1.
  const double allReduce[] = {0.0, 1.0, 4.0 / 3, 1.5, 1.6, 5.0 / 3, 12.0 / 7, 1.75};
  const double split[] = {0.0, 0.5, 2.0 / 3, 0.75, 0.8, 5.0 / 6, 6.0 / 7, 0.875};
  for (int n = 1; n <= 8; ++n) {
    INFO("n = " << n);
    CHECK(busBandwidthFactor(Collective::AllReduce, n) == Approx(allReduce[n - 1]));
    for (Collective c : {Collective::AllGather, Collective::ReduceScatter, Collective::AlltoAll,
                         Collective::Gather, Collective::Scatter})
      CHECK(busBandwidthFactor(c, n) == Approx(split[n - 1]));
    for (Collective c : {Collective::Broadcast, Collective::Reduce, Collective::SendRecv})
      CHECK(busBandwidthFactor(c, n) == 1.0);
  }
}

TEST_CASE("algorithm bandwidth is bytes per second in units of 1e9") {
  CHECK(algorithmBandwidth(1000000000, 1e6) == Approx(1.0));
  CHECK(algorithmBandwidth(1 << 20, 100.0) == Approx(10.48576));
  CHECK(algorithmBandwidth(8, 0.0) == 0.0);
  CHECK(algorithmBandwidth(0, 5.0) == 0.0);
}
