// weft-perf --calibrate's arithmetic: timings made here from known link parameters must give
// those parameters back.
#include "tools/weft-perf/calibration_fit.hpp"

#include <catch2/catch.hpp>
#include <stdexcept>
#include <vector>

using namespace weft::perf;

namespace {

// What the cost model charges one message of `bytes`: per-message CPU + latency + transfer.
double modelSeconds(double messageUs, double latencyUs, double gbps, double bytes) {
  return (messageUs + latencyUs) * 1e-6 + bytes / (gbps * 1e9);
}

}  // namespace

TEST_CASE("a line through exact timings is found again") {
  std::vector<SizeSample> samples;
  for (double bytes : {65536.0, 262144.0, 1048576.0, 16777216.0})
    samples.push_back({bytes, 3e-6 + bytes / 8e9});
  const LineFit fit = fitLine(samples);
  CHECK(fit.intercept == Approx(3e-6).epsilon(1e-9));
  CHECK(fit.slope == Approx(1 / 8e9).epsilon(1e-9));
}

TEST_CASE("a line whose intercept would be negative goes through the origin") {
  // Time growing faster than size (t = 2 ns x bytes - 1 us): a least-squares intercept below
  // zero, which would make small messages free.
  const std::vector<SizeSample> samples{{1000, 1e-6}, {2000, 3e-6}, {4000, 7e-6}};
  const LineFit fit = fitLine(samples);
  CHECK(fit.intercept == 0);
  CHECK(fit.slope > 0);
  for (const SizeSample& s : samples) CHECK(fit.slope * s.bytes == Approx(s.seconds).epsilon(0.5));
}

TEST_CASE("link parameters come back from the timings they would give") {
  const double message = 0.8, latency = 1.5, gbps = 6.0;
  const double one = modelSeconds(message, latency, gbps, 8);
  // A burst of 32 messages: each waits for the ones before it on the sender's CPU, the latencies
  // overlap.
  const double burst = 32 * message * 1e-6 + latency * 1e-6 + 32 * 8 / (gbps * 1e9);
  std::vector<SizeSample> large;
  for (double bytes : {65536.0, 1048576.0, 16777216.0})
    large.push_back({bytes, modelSeconds(message, latency, gbps, bytes)});
  const LinkFit link = fitLink(one, burst, 32, large);
  // (the burst's 8-byte transfers add a nanosecond per message)
  CHECK(link.messageUs == Approx(message).epsilon(1e-2));
  CHECK(link.latencyUs == Approx(latency).epsilon(1e-3));
  CHECK(link.bandwidthGBps == Approx(gbps).epsilon(1e-6));
}

TEST_CASE("noisy small-message timings never give negative costs") {
  std::vector<SizeSample> large{{65536, 20e-6}, {1048576, 200e-6}};
  // The burst measured faster per message than one message alone.
  const LinkFit link = fitLink(10e-6, 5e-6, 32, large);
  CHECK(link.messageUs == 0);
  CHECK(link.latencyUs == Approx(10));
  CHECK(link.latencyUs > 0);
}

TEST_CASE("timings that cannot be fitted are refused") {
  CHECK_THROWS_AS(fitLine({{1000, 1e-6}}), std::invalid_argument);
  CHECK_THROWS_AS(fitLine({{1000, 1e-6}, {1000, 2e-6}}), std::invalid_argument);
  CHECK_THROWS_AS(fitLine({{1000, 0}, {2000, 1e-6}}), std::invalid_argument);
  CHECK_THROWS_AS(fitLink(1e-6, 2e-6, 1, {{1000, 1e-6}, {2000, 2e-6}}), std::invalid_argument);
  // Time that falls with size: no bandwidth.
  CHECK_THROWS_AS(fitLink(1e-6, 2e-6, 32, {{1000, 5e-6}, {100000, 1e-6}}), std::invalid_argument);
}
