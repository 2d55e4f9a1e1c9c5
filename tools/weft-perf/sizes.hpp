// The size sweep, how a size becomes counts and buffers for each collective (nccl-tests'
// conventions), and the bandwidth arithmetic. Pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collective.hpp"
#include "options.hpp"

namespace weft::perf {

// The requested sizes in bytes: minBytes, then times stepFactor (or plus stepBytes) while not
// above maxBytes. A size of 0 is followed by 1 when multiplying.
std::vector<uint64_t> sweepSizes(const Options& options);

// One row's buffers, in elements of the row's datatype.
struct Layout {
  uint64_t count = 0;      // the count argument of the call (per rank for the split collectives)
  uint64_t sendCount = 0;  // elements of each rank's send buffer
  uint64_t recvCount = 0;  // elements of each rank's receive buffer
  // In-place runs use one buffer of max(sendCount, recvCount) elements; the send pointer is
  // buffer + rank * sendInPlaceOffset and the receive pointer buffer + rank * recvInPlaceOffset.
  uint64_t sendInPlaceOffset = 0;
  uint64_t recvInPlaceOffset = 0;
  uint64_t bytes = 0;  // the size column: max(sendCount, recvCount) * element size

  uint64_t inPlaceCount() const { return sendCount > recvCount ? sendCount : recvCount; }
};

// The layout nccl-tests uses for `requestedBytes` of elements of `typeSize` bytes: count =
// requestedBytes / typeSize, and for the collectives whose buffer is split per rank
// (all_gather, reduce_scatter, alltoall, gather, scatter) count / nranks per rank, so the size
// shrinks to a multiple of typeSize * nranks.
Layout layoutFor(Collective collective, uint64_t requestedBytes, size_t typeSize, int nranks);

// busbw = algbw * factor: 2(n-1)/n for all_reduce; (n-1)/n for all_gather, reduce_scatter,
// alltoall, gather, scatter; 1 for broadcast, reduce, sendrecv.
double busBandwidthFactor(Collective collective, int nranks);

// bytes / time in GB/s (1 GB = 1e9 B); 0 when the time is not positive.
double algorithmBandwidth(uint64_t bytes, double timeUs);

}  // namespace weft::perf
