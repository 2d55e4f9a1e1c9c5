// Issues one collective of a test case through the public C API.
#pragma once

#include "include/weft.h"
#include "support/collective_case.hpp"

namespace weft::testing {

inline weftResult_t issue(const CaseShape& s, const RankBuffers& b, weftRedOp_t op,
                          weftComm_t comm, weftStream_t stream) {
  const auto t = s.type;
  const size_t c = s.count;
  switch (s.collective) {
    case Collective::AllReduce:
      return weftAllReduce(b.sendbuff, b.recvbuff, c, t, op, comm, stream);
    case Collective::Broadcast:
      return weftBroadcast(b.sendbuff, b.recvbuff, c, t, s.root, comm, stream);
    case Collective::Reduce:
      return weftReduce(b.sendbuff, b.recvbuff, c, t, op, s.root, comm, stream);
    case Collective::AllGather: return weftAllGather(b.sendbuff, b.recvbuff, c, t, comm, stream);
    case Collective::ReduceScatter:
      return weftReduceScatter(b.sendbuff, b.recvbuff, c, t, op, comm, stream);
    case Collective::AlltoAll: return weftAlltoAll(b.sendbuff, b.recvbuff, c, t, comm, stream);
    case Collective::Gather:
      return weftGather(b.sendbuff, b.recvbuff, c, t, s.root, comm, stream);
    case Collective::Scatter:
      return weftScatter(b.sendbuff, b.recvbuff, c, t, s.root, comm, stream);
    default: return weftInternalError;
  }
}

// Makes the pre-multiplied-sum operator the tests use (scalar premulScalar(type)).
inline weftResult_t createPreMulSum(weftDataType_t type, weftComm_t comm, weftRedOp_t* op) {
  std::array<uint8_t, 8> scalar{};
  encode(type, premulScalar(type), scalar.data());
  return weftRedOpCreatePreMulSum(op, scalar.data(), type, weftScalarHostImmediate, comm);
}

inline constexpr Collective kAllCollectives[] = {
    Collective::AllReduce, Collective::Broadcast,     Collective::Reduce,
    Collective::AllGather, Collective::ReduceScatter, Collective::AlltoAll,
    Collective::Gather,    Collective::Scatter};

}  // namespace weft::testing
