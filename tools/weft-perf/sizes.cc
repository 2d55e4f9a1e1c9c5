#include "sizes.hpp"

#include <limits>

namespace weft::perf {

std::vector<uint64_t> sweepSizes(const Options& options) {
  std::vector<uint64_t> sizes;
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  uint64_t size = options.minBytes;
  while (size <= options.maxBytes) {
    sizes.push_back(size);
    if (options.stepBytes > 0) {
      if (size > kMax - options.stepBytes) break;
      size += options.stepBytes;
    } else if (size == 0) {
      size = 1;
    } else {
      if (size > kMax / options.stepFactor) break;
      size *= options.stepFactor;
    }
  }
  return sizes;
}

Layout layoutFor(Collective collective, uint64_t requestedBytes, size_t typeSize, int nranks) {
  const uint64_t n = static_cast<uint64_t>(nranks);
  const uint64_t count = requestedBytes / typeSize;
  const uint64_t perRank = count / n;
  Layout l;
  switch (collective) {
    case Collective::AllReduce:
    case Collective::Broadcast:
    case Collective::Reduce:
    case Collective::SendRecv: l.count = l.sendCount = l.recvCount = count; break;
    case Collective::AllGather:
    case Collective::Gather:
      l.count = l.sendCount = perRank;
      l.recvCount = perRank * n;
      l.sendInPlaceOffset = perRank;
      break;
    case Collective::ReduceScatter:
    case Collective::Scatter:
      l.count = l.recvCount = perRank;
      l.sendCount = perRank * n;
      l.recvInPlaceOffset = perRank;
      break;
    case Collective::AlltoAll:
      l.count = perRank;
      l.sendCount = l.recvCount = perRank * n;
      break;
  }
  l.bytes = l.inPlaceCount() * typeSize;
  return l;
}

double busBandwidthFactor(Collective collective, int nranks) {
  const double n = nranks;
  switch (collective) {
    case Collective::AllReduce: return 2.0 * (n - 1) / n;
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AlltoAll:
    case Collective::Gather:
    case Collective::Scatter: return (n - 1) / n;
    case Collective::Broadcast:
    case Collective::Reduce:
    case Collective::SendRecv: return 1.0;
  }
  return 1.0;
}

double algorithmBandwidth(uint64_t bytes, double timeUs) {
  if (!(timeUs > 0)) return 0.0;
  return static_cast<double>(bytes) / 1.0e3 / timeUs;
}

}  // namespace weft::perf
