// One call of the API, as the launch layer sees it.
#pragma once

#include <cstdint>
#include <string>

#include "algorithms/schedule.hpp"
#include "include/weft.h"

namespace weft {

struct Operation {
  Collective collective = Collective::AllReduce;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  uint64_t count = 0;
  weftDataType_t datatype = weftFloat32;
  weftRedOp_t op = weftSum;
  int root = 0;  // the root of Broadcast/Reduce/Gather/Scatter; the peer of Send/Recv
};

// Elements of the send and receive buffers of `rank` (NCCL's layouts).
uint64_t sendElements(const Operation& op, int rank, int nranks);
uint64_t recvElements(const Operation& op, int rank, int nranks);
// Whether the buffers are in NCCL's in-place form for this collective on this rank.
bool isInPlace(const Operation& op, int rank, int nranks);

// "AllReduce(count=1024, float, sum)" for messages.
std::string describe(const Operation& op);

}  // namespace weft
