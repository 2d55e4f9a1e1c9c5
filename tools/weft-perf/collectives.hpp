// Issuing one collective through weft's C API (buffers placed by regions.hpp).
#pragma once

#include <weft.h>

#include <cstddef>
#include <cstdint>

#include "collective.hpp"

namespace weft::perf {

struct Call {
  Collective collective = Collective::AllReduce;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;
  weftDataType_t datatype = weftFloat32;
  weftRedOp_t op = weftSum;  // reducing collectives only
  int root = 0;              // rooted collectives only
  int rank = 0;
  int nranks = 1;
};

struct CallResult {
  weftResult_t result = weftSuccess;
  const char* function = "";  // the weft function that failed
};

// Runs (stream == NULL) or enqueues the call. sendrecv is a weftSend to (rank+1)%n and a
// weftRecv from (rank-1+n)%n inside weftGroupStart/weftGroupEnd.
CallResult issue(const Call& call, weftComm_t comm, weftStream_t stream);

}  // namespace weft::perf
