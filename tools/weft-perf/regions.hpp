// What each buffer of a rank holds before one collective and what it must hold after: the
// per-collective statement of NCCL's buffer semantics that verification checks, plus the fill
// and the comparison. Pure: plain memory in, counts out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collective.hpp"
#include "sizes.hpp"
#include "values.hpp"

namespace weft::perf {

// Buffers of one rank. Out-of-place runs use both; in-place runs use only kRecvBuffer, which
// then is the single in-place buffer of layout.inPlaceCount() elements.
inline constexpr int kSendBuffer = 0;
inline constexpr int kRecvBuffer = 1;

enum class Content {
  Input,     // element j is inputBits(sourceRank, sourceIndex + j)
  Reduced,   // element j is the reduction over ranks at index sourceIndex + j
  Sentinel,  // element j keeps sentinelBits(buffer, offset + j): nothing may write there
};

struct Region {
  int buffer = kRecvBuffer;
  uint64_t offset = 0;  // elements
  uint64_t count = 0;
  Content content = Content::Sentinel;
  int sourceRank = 0;
  uint64_t sourceIndex = 0;
};

struct BufferPlan {
  uint64_t extent[2] = {0, 0};  // elements of each buffer the operation may touch
  bool used[2] = {false, false};
  std::vector<Region> before;  // covers every used buffer's extent
  std::vector<Region> after;   // likewise
};

// Whether a mode exists. In-place sendrecv (sendbuff == recvbuff: a rank receives into the
// buffer it is sending from) is a race in NCCL and MPI alike (MPI forbids it; nccl-tests
// reports its #wrong as N/A) and weft refuses it (weftInvalidUsage: a receive may not overlap
// another operation's buffer in a group), so it is neither run nor timed: its columns are N/A.
constexpr bool hasMode(Collective collective, bool inPlace) {
  return !(inPlace && collective == Collective::SendRecv);
}

// The plan of `rank` for one call with `layout`.
BufferPlan planBuffers(Collective collective, const Layout& layout, bool inPlace, int rank,
                       int nranks, int root);

struct BufferPointers {
  const void* send = nullptr;
  void* recv = nullptr;
};

// The pointers for one run, from element 0 of the rank's send and receive allocations.
// In-place runs use the receive allocation alone, in NCCL's in-place form: send = buffer +
// rank * sendInPlaceOffset, recv = buffer + rank * recvInPlaceOffset (all_gather: send is the
// rank's block; reduce_scatter and scatter: recv is the rank's block; gather on its root: send
// is the root's block; the others: send == recv).
BufferPointers placeBuffers(const Layout& layout, bool inPlace, int rank, uint8_t* send,
                            uint8_t* recv, size_t typeSize);

// Bytes of guard kept before and after each buffer's extent (allocations must have room).
inline constexpr size_t kGuardBytes = 64;

// Writes plan.before (and the guards around each used buffer's extent) into buffers[b], which
// point at element 0 of each buffer.
void fillBuffers(const BufferPlan& plan, uint8_t* const buffers[2], const ValueSpec& spec);

// Elements that differ from plan.after, plus guard bytes that changed.
uint64_t countWrong(const BufferPlan& plan, const uint8_t* const buffers[2], const ValueSpec& spec);

}  // namespace weft::perf
