// From timings to the cost model's link parameters (weft-perf --calibrate). Pure arithmetic:
// calibrate.cc measures, this turns the measurements into what a tuning file holds.
//
// The model (algorithms/cost/simulator.hpp) charges a message of S bytes on a link
//   messageUs (sender CPU, one message after another) + latencyUs + S / bandwidth.
// Calibration times ring exchanges (every rank sends to the next and receives from the
// previous, all at once, as a ring schedule's steps do):
//   - one 8-byte message per exchange: t1 = message + latency;
//   - a burst of k 8-byte messages per exchange: tk = k * message + latency (the messages
//     queue behind each other's CPU work, their latencies overlap);
//   - single messages of several large sizes: t(S) = a + S / bandwidth, fitted by least squares
//     on relative error, so that no size dominates.
#pragma once

#include <vector>

namespace weft::perf {

struct SizeSample {
  double bytes = 0;
  double seconds = 0;
};

struct LineFit {
  double intercept = 0;  // seconds
  double slope = 0;      // seconds per byte
};

// Least squares of sum(((intercept + slope * bytes) - seconds) / seconds)^2 over the samples.
// Needs at least two distinct sizes and positive times; a negative intercept is clamped to 0
// (and the slope refitted through the origin).
LineFit fitLine(const std::vector<SizeSample>& samples);

struct LinkFit {
  double latencyUs = 0;
  double messageUs = 0;
  double bandwidthGBps = 0;
};

// one: t1 (seconds); burst: tk for `burstMessages` messages; large: the size sweep. The latency
// is at least 0.01 us (a tuning file's latencies are positive), the message cost at least 0.
LinkFit fitLink(double one, double burst, int burstMessages, const std::vector<SizeSample>& large);

}  // namespace weft::perf
