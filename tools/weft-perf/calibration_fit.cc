#include "calibration_fit.hpp"

#include <algorithm>
#include <stdexcept>

namespace weft::perf {

LineFit fitLine(const std::vector<SizeSample>& samples) {
  // Weighted least squares with weights 1 / t^2: the normal equations of
  // min sum w (a + b x - t)^2.
  double sw = 0, swx = 0, swxx = 0, swt = 0, swxt = 0;
  for (const SizeSample& s : samples) {
    if (!(s.seconds > 0) || s.bytes < 0) throw std::invalid_argument("fitLine: bad sample");
    const double w = 1.0 / (s.seconds * s.seconds);
    sw += w;
    swx += w * s.bytes;
    swxx += w * s.bytes * s.bytes;
    swt += w * s.seconds;
    swxt += w * s.bytes * s.seconds;
  }
  const double det = sw * swxx - swx * swx;
  if (samples.size() < 2 || !(det > 0)) throw std::invalid_argument("fitLine: needs two sizes");
  LineFit fit;
  fit.slope = (sw * swxt - swx * swt) / det;
  fit.intercept = (swt - fit.slope * swx) / sw;
  if (fit.intercept < 0) {
    fit.intercept = 0;
    fit.slope = swxt / swxx;
  }
  return fit;
}

LinkFit fitLink(double one, double burst, int burstMessages, const std::vector<SizeSample>& large) {
  if (burstMessages < 2 || !(one > 0) || !(burst > 0))
    throw std::invalid_argument("fitLink: bad small-message samples");
  LinkFit link;
  // Noise can make the burst look cheaper per message than nothing: no negative costs.
  const double message = std::max(0.0, (burst - one) / (burstMessages - 1));
  link.messageUs = message * 1e6;
  // A tuning file's latency is positive: 10 ns stands for "lost in the noise".
  link.latencyUs = std::max(0.01, (one - message) * 1e6);
  const LineFit line = fitLine(large);
  if (!(line.slope > 0)) throw std::invalid_argument("fitLink: time does not grow with size");
  link.bandwidthGBps = 1.0 / line.slope / 1e9;
  return link;
}

}  // namespace weft::perf
